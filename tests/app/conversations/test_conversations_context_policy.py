"""A conversation longer than the context under its own policy: refused with the numbers (the
default), or cut (middle / rolling) with a notice stored on the reply; what the model read fits."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager, chat_messages
from engine.errors import ContextOverflowError
from tests.app.engine_fixtures import GREEDY, make_engine  # noqa: F401 (fixture)

CONTEXT = 128


@pytest.fixture
def manager(make_engine, tiny_models, store):
    m = ConversationManager(make_engine(tiny_models["llama"], "torch", max_context=CONTEXT), store)
    yield m
    m.close()


def long_conversation(store, policy=None):
    c = store.create_conversation("long", system_prompt="Be brief.",
                                  sampling={"context_policy": policy} if policy else {})
    for i in range(8):
        store.append_message(c.id, "user", f"Question {i} about the weather in some city or other.")
        store.append_message(c.id, "assistant", f"Answer {i}: it is mild and dry there today, as usual.")
    return c


def test_by_default_a_conversation_too_long_is_refused_and_kept(manager, store):
    c = long_conversation(store)
    with pytest.raises(ContextOverflowError, match=f"max_context is {CONTEXT}"):
        list(manager.reply(c.id, "And now?", GREEDY))
    messages = store.messages(c.id)
    assert messages[-2].content == "And now?"  # nothing the user wrote is lost
    assert messages[-1].status == "error" and messages[-1].notice == ""


@pytest.mark.parametrize("policy", ["rolling", "middle"])
def test_a_cutting_policy_answers_and_notes_what_was_left_out(manager, store, policy):
    c = long_conversation(store, policy)
    chunks = list(manager.reply(c.id, "And now?", GREEDY))
    reply = store.messages(c.id)[-1]
    assert reply.status == "complete"
    assert "earlier messages" in reply.notice and "left out" in reply.notice
    assert ("from the middle" in reply.notice) == (policy == "middle")
    prompt = chunks[-1].stats.prompt_tokens
    assert prompt + GREEDY.max_tokens <= CONTEXT
    assert f"→ {prompt:,} tokens" in reply.notice
    # Nothing was deleted: the store still holds every message, and the next turn fits again.
    assert len(chat_messages(store, c.id)) == 1 + 16 + 2
    list(manager.reply(c.id, "Once more?", GREEDY))
    assert "left out" in store.messages(c.id)[-1].notice


def test_a_conversation_that_fits_gets_no_notice(manager, store):
    c = store.create_conversation("short", sampling={"context_policy": "rolling"})
    list(manager.reply(c.id, "Hi", GREEDY))
    assert store.messages(c.id)[-1].notice == ""
