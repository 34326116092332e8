"""One reply's data flow through the manager: the store gets the user's message, a streaming row
that ends with status, exact token ids and stats; an error marks the row and reaches the caller."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager, chat_messages
from app.store import NotFoundError
from engine.errors import ContextOverflowError
from tests.app.engine_fixtures import GREEDY, make_engine, reply_ids  # noqa: F401 (fixture)


@pytest.fixture
def manager(make_engine, tiny_models, store):
    m = ConversationManager(make_engine(tiny_models["llama"], "torch", max_context=256), store)
    yield m
    m.close()


def test_reply_stores_user_message_and_finished_reply(manager, store):
    c = store.create_conversation("c", system_prompt="Be brief.")
    chunks = list(manager.reply(c.id, "Hello", GREEDY))
    user, assistant = store.messages(c.id)
    assert (user.role, user.content, user.status) == ("user", "Hello", "complete")
    assert assistant.status == "complete"
    assert assistant.content == "".join(ch.text for ch in chunks)
    assert list(assistant.token_ids) == [t for ch in chunks for t in ch.token_ids]
    assert assistant.stats.completion_tokens == GREEDY.max_tokens
    assert assistant.stats.prompt_tokens == chunks[-1].stats.prompt_tokens
    assert assistant.stats.ttft_s > 0
    assert chat_messages(store, c.id)[0] == {"role": "system", "content": "Be brief."}


def test_history_leaves_out_error_and_empty_replies(store):
    c = store.create_conversation("c")
    store.append_message(c.id, "user", "one")
    store.append_message(c.id, "assistant", "", status="cancelled")
    store.append_message(c.id, "assistant", "broken", status="error", error="boom")
    store.append_message(c.id, "assistant", "half", status="interrupted")
    store.append_message(c.id, "user", "two")
    assert chat_messages(store, c.id) == [
        {"role": "user", "content": "one"}, {"role": "assistant", "content": "half"},
        {"role": "user", "content": "two"}]


def test_an_engine_error_marks_the_reply_and_reaches_the_caller(manager, store):
    c = store.create_conversation("c")
    reply_ids(manager.reply(c.id, "short", GREEDY))
    good = store.messages(c.id)[-1]
    with pytest.raises(ContextOverflowError):
        list(manager.reply(c.id, "word " * 400, GREEDY))
    user, assistant = store.messages(c.id)[-2:]
    assert user.content.startswith("word")
    assert assistant.status == "error" and "ContextOverflowError" in assistant.error
    assert manager.live_conversations() == []  # the session was dropped, not reused
    store.truncate_after(good.id)  # the user edits the long message away; the conversation goes on
    ids, _ = reply_ids(manager.reply(c.id, "short again", GREEDY))
    assert len(ids) == GREEDY.max_tokens


def test_unknown_conversation_is_refused_before_any_engine_work(manager):
    with pytest.raises(NotFoundError):
        manager.session_for(12345)
    assert manager.engine.capacity().live_sessions == 0
