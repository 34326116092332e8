import pytest

from app.store import NotFoundError


def _record(store, c, model="m", template="t", size=100, token_count=10):
    path = store.states.new_path(c.id)
    path.write_bytes(b"s" * size)
    return store.states.record(c.id, model_fingerprint=model, template_fingerprint=template,
                               token_count=token_count, path=path, nbytes=size, prefix_hash="h")


def test_record_and_get(store):
    c = store.create_conversation()
    s = _record(store, c)
    assert store.states.get(c.id, "m", "t") == s
    assert (s.token_count, s.nbytes, s.prefix_hash, s.path.read_bytes()) == (10, 100, "h", b"s" * 100)
    assert store.states.get(c.id, "m", "other template") is None
    assert store.states.get_by_id(s.id) == s


def test_paths_inside_the_states_folder_are_stored_relative(store, tmp_path):
    c = store.create_conversation()
    inside = _record(store, c)
    assert store.db.execute("select path from saved_states where id = ?", [inside.id]).fetchone()[0] == inside.path.name
    outside = tmp_path / "elsewhere.state"
    outside.write_bytes(b"x")
    s = store.states.record(c.id, model_fingerprint="m2", template_fingerprint="t", token_count=1,
                            path=outside, nbytes=1)
    assert s.path == outside


def test_lru_order_touch_and_total_bytes(store):
    a, b, c = (store.create_conversation() for _ in range(3))
    sa, sb, sc = _record(store, a, size=10), _record(store, b, size=20), _record(store, c, size=30)
    assert [s.id for s in store.states.by_last_used()] == [sa.id, sb.id, sc.id]
    store.states.touch(sa.id)
    assert [s.id for s in store.states.by_last_used()] == [sb.id, sc.id, sa.id]
    assert store.states.total_bytes() == 60


def test_delete_removes_record_and_file(store):
    c = store.create_conversation()
    s = _record(store, c)
    store.states.delete(s.id)
    assert store.states.get(c.id, "m", "t") is None and not s.path.exists()
    assert store.states.total_bytes() == 0


def test_recording_the_same_key_again_replaces_the_old_file(store):
    c = store.create_conversation()
    old = _record(store, c, token_count=10)
    new = _record(store, c, token_count=20)
    assert store.states.for_conversation(c.id) == [new]
    assert not old.path.exists() and new.path.exists()
    other_model = _record(store, c, model="m2")
    assert len(store.states.for_conversation(c.id)) == 2 and other_model.path.exists()


def test_new_paths_are_unique_and_inside_the_folder(store):
    c = store.create_conversation()
    paths = {store.states.new_path(c.id) for _ in range(50)}
    assert len(paths) == 50 and all(p.parent == store.states.directory for p in paths)


@pytest.mark.parametrize("call", [lambda s: s.states.touch(7), lambda s: s.states.delete(7),
                                  lambda s: s.states.get_by_id(7)])
def test_missing_state(store, call):
    with pytest.raises(NotFoundError, match="^No saved state 7.$"):
        call(store)
