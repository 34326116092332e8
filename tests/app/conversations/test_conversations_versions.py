"""Versions and Continue through the manager: regenerate answers the same user message beside the
old reply; Continue picks up an interrupted reply (cold, after a restart) or an empty stopped one."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager, chat_messages
from app.store import ReplyClosedError
from tests.app.engine_fixtures import GREEDY, make_engine  # noqa: F401 (fixture)


@pytest.fixture
def manager(make_engine, tiny_models, store):
    m = ConversationManager(make_engine(tiny_models["llama"], "torch", max_context=256), store)
    yield m
    m.close()


def test_regenerate_sends_the_history_without_the_old_reply(manager, store):
    c = store.create_conversation()
    list(manager.reply(c.id, "Hello", GREEDY))
    old = store.messages(c.id)[-1]
    with pytest.raises(ValueError, match="does not end with a user message"):
        list(manager.reply(c.id, None, GREEDY))  # the end of the branch is a reply: say which to answer
    list(manager.reply(c.id, None, GREEDY, parent_id=old.parent_id))
    user, new = store.messages(c.id)
    assert new.id != old.id and (new.version, new.versions) == (2, 2)
    assert [m["role"] for m in chat_messages(store, c.id)] == ["user", "assistant"]
    assert chat_messages(store, c.id)[-1]["content"] == new.content


def test_continue_after_a_restart_extends_the_interrupted_reply(manager, store):
    c = store.create_conversation()
    user = store.append_message(c.id, "user", "Count")
    writer = store.start_reply(c.id)
    writer.append("one two")
    writer.flush()
    store.recover_interrupted()  # as after a crash: the row was left streaming
    cut = store.messages(c.id)[-1]
    assert cut.status == "interrupted"
    chunks = list(manager.continue_reply(c.id, cut.id, GREEDY))
    done = store.get_message(cut.id)
    assert done.content == "one two" + "".join(ch.text for ch in chunks)
    assert (done.status, done.finish_reason) == ("complete", "length")
    assert [m.id for m in store.messages(c.id)] == [user.id, cut.id]


def test_continue_of_an_empty_stopped_reply_writes_it_from_the_start(manager, store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "Count")
    empty = store.start_reply(c.id).cancel()
    chunks = list(manager.continue_reply(c.id, empty.id, GREEDY))
    assert store.get_message(empty.id).content == "".join(ch.text for ch in chunks) != ""


def test_continue_refuses_a_reply_that_is_not_the_last(manager, store):
    c = store.create_conversation()
    list(manager.reply(c.id, "Hello", GREEDY))
    first = store.messages(c.id)[-1]
    list(manager.reply(c.id, "Again", GREEDY))
    with pytest.raises(ReplyClosedError, match="not the last message"):
        list(manager.continue_reply(c.id, first.id, GREEDY))
    assert not manager._replying


def test_continue_right_after_a_cut_reply_is_warm(manager, store):
    c = store.create_conversation()
    list(manager.reply(c.id, "Count", GREEDY))
    cut = store.messages(c.id)[-1]
    assert cut.finish_reason == "length"
    chunks = list(manager.continue_reply(c.id, cut.id, GREEDY))
    # The session still holds the open reply: only its lazily fed last token goes through the model.
    assert chunks[-1].stats.prefilled_tokens == 1
