import pytest

from app.store import InvalidValueError, NotFoundError, ReplyStats


def test_append_numbers_positions_and_bumps_the_conversation(store):
    c = store.create_conversation()
    first = store.append_message(c.id, "system", "rules")
    second = store.append_message(c.id, "user", "hi")
    assert (first.position, second.position) == (0, 1)
    assert store.get_conversation(c.id).updated_at == second.created_at
    assert [m.id for m in store.messages(c.id)] == [first.id, second.id]


def test_token_ids_and_stats_round_trip_exactly(store):
    c = store.create_conversation()
    stats = ReplyStats(ttft_s=0.123456789, tok_s=55.5, prompt_tokens=10, completion_tokens=3)
    m = store.append_message(c.id, "assistant", "ok", token_ids=[0, 151643, 2**31 + 5], stats=stats)
    got = store.get_message(m.id)
    assert got.token_ids == (0, 151643, 2**31 + 5) and got.stats == stats
    assert store.append_message(c.id, "user", "typed").token_ids is None


def test_edit_replaces_text_and_drops_token_ids(store):
    c = store.create_conversation()
    m = store.append_message(c.id, "assistant", "old", token_ids=[1, 2])
    edited = store.edit_message(m.id, "new")
    assert (edited.content, edited.token_ids, edited.position) == ("new", None, m.position)


def test_truncate_after_keeps_the_message_and_everything_before(store):
    c, other = store.create_conversation(), store.create_conversation()
    ms = [store.append_message(c.id, role, f"m{i}") for i, role in enumerate(["user", "assistant"] * 3)]
    store.append_message(other.id, "user", "untouched")
    assert store.truncate_after(ms[2].id) == 3
    assert [m.content for m in store.messages(c.id)] == ["m0", "m1", "m2"]
    assert store.append_message(c.id, "assistant", "again").position == 3
    assert len(store.messages(other.id)) == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"role": "bot"}, "role must be one of system, user, assistant, not 'bot'"),
    ({"status": "done"}, "status must be one of complete, streaming, interrupted, cancelled, error, not 'done'"),
    ({"token_ids": [1, "2"]}, "token_ids must be integers"),
    ({"token_ids": [True]}, "token_ids must be integers"),
    ({"content": None}, "content must be text, not NoneType"),
])
def test_bad_values(store, kwargs, message):
    c = store.create_conversation()
    args = {"role": "user", **kwargs}
    with pytest.raises(InvalidValueError) as e:
        store.append_message(c.id, args.pop("role"), args.pop("content", "x"), **args)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("call", [
    lambda s: s.get_message(404),
    lambda s: s.edit_message(404, "x"),
    lambda s: s.truncate_after(404),
])
def test_missing_message(store, call):
    with pytest.raises(NotFoundError, match="^No message 404.$"):
        call(store)
