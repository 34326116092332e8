import pytest

from app.store import InvalidValueError, NotFoundError


def test_create_and_get(store):
    c = store.create_conversation("Plans", model="bundled:x", system_prompt="Be brief.",
                                  sampling={"temperature": 0.2, "seed": 7})
    assert store.get_conversation(c.id) == c
    assert (c.title, c.model, c.system_prompt, c.pinned) == ("Plans", "bundled:x", "Be brief.", False)
    assert c.sampling == {"temperature": 0.2, "seed": 7}
    assert c.created_at == c.updated_at


def test_defaults(store):
    c = store.create_conversation()
    assert (c.title, c.model, c.system_prompt, c.sampling, c.pinned) == ("", None, "", {}, False)


def test_list_is_pinned_first_then_most_recently_updated(store):
    a, b, c = (store.create_conversation(t) for t in "abc")
    store.append_message(a.id, "user", "a is now the newest")
    assert [x.title for x in store.list_conversations()] == ["a", "c", "b"]
    store.set_pinned(b.id)
    assert [x.title for x in store.list_conversations()] == ["b", "a", "c"]
    store.set_pinned(b.id, False)
    assert [x.title for x in store.list_conversations()] == ["a", "c", "b"]


def test_rename_and_update_do_not_reorder(store):
    a, b = store.create_conversation("a"), store.create_conversation("b")
    renamed = store.rename_conversation(a.id, "renamed")
    assert renamed.title == "renamed" and renamed.updated_at == a.updated_at
    assert [x.id for x in store.list_conversations()] == [b.id, a.id]
    updated = store.update_conversation(a.id, model="m2", system_prompt="new", sampling={"top_p": 0.9})
    assert (updated.model, updated.system_prompt, updated.sampling) == ("m2", "new", {"top_p": 0.9})
    assert store.update_conversation(a.id, model=None).model is None


def test_delete_removes_messages_and_saved_state_files(store):
    keep, gone = store.create_conversation("keep"), store.create_conversation("gone")
    for c in (keep, gone):
        store.append_message(c.id, "user", "hello")
        path = store.states.new_path(c.id)
        path.write_bytes(b"x" * 10)
        store.states.record(c.id, model_fingerprint="m", template_fingerprint="t", token_count=4,
                            path=path, nbytes=10)
    gone_file = store.states.for_conversation(gone.id)[0].path
    store.delete_conversation(gone.id)
    assert [c.id for c in store.list_conversations()] == [keep.id]
    assert store.db.execute("select count(*) from messages where conversation_id = ?", [gone.id]).fetchone()[0] == 0
    assert store.states.for_conversation(gone.id) == [] and not gone_file.exists()
    assert len(store.messages(keep.id)) == 1 and store.states.for_conversation(keep.id)[0].path.exists()


@pytest.mark.parametrize("call, message", [
    (lambda s: s.get_conversation(99), "No conversation 99."),
    (lambda s: s.rename_conversation(99, "x"), "No conversation 99."),
    (lambda s: s.set_pinned(99), "No conversation 99."),
    (lambda s: s.delete_conversation(99), "No conversation 99."),
    (lambda s: s.messages(99), "No conversation 99."),
    (lambda s: s.append_message(99, "user", "hi"), "No conversation 99."),
])
def test_missing_conversation(store, call, message):
    with pytest.raises(NotFoundError) as e:
        call(store)
    assert str(e.value) == message


@pytest.mark.parametrize("sampling, message", [
    ([0.2], "sampling must be a dict of setting names to values, not [0.2]"),
    ({"temperature": float("nan")}, "sampling must hold only JSON values"),
    ({"x": object}, "sampling must hold only JSON values"),
])
def test_bad_sampling(store, sampling, message):
    with pytest.raises(InvalidValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        store.create_conversation(sampling=sampling)


@pytest.mark.parametrize("kwargs, message", [
    ({"title": None}, "title must be text, not NoneType"),
    ({"system_prompt": 3}, "system_prompt must be text, not int"),
    ({"model": b"m"}, "model must be text, not bytes"),
])
def test_bad_settings(store, kwargs, message):
    c = store.create_conversation()
    for call in (lambda: store.create_conversation(**kwargs), lambda: store.update_conversation(c.id, **kwargs)):
        with pytest.raises(InvalidValueError) as e:
            call()
        assert str(e.value) == message
