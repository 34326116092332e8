"""A reply cut because the conversation filled the model's context (issue 38, defect 3): it is kept
as cut by the context, not by the token limit, and a Continue the full context refuses leaves the
stored reply exactly as it was (never "Failed")."""

from __future__ import annotations

import dataclasses

import pytest

from app.conversations import ConversationManager
from app.store import CONTEXT_FULL
from engine.errors import ContextOverflowError
from tests.app.engine_fixtures import GREEDY, make_engine  # noqa: F401 (fixture)

CONTEXT = 96
LONG = dataclasses.replace(GREEDY, max_tokens=512)  # the limit is far away: the context ends the reply


@pytest.fixture
def manager(make_engine, tiny_models, store):
    m = ConversationManager(make_engine(tiny_models["llama"], "torch", max_context=CONTEXT), store)
    yield m
    m.close()


def test_a_reply_that_fills_the_context_is_stored_as_cut_by_the_context(manager, store):
    c = store.create_conversation("count")
    list(manager.reply(c.id, "Count to a thousand.", LONG))
    reply = store.messages(c.id)[-1]
    assert reply.status == "complete" and reply.finish_reason == CONTEXT_FULL
    assert reply.stats.prompt_tokens + reply.stats.completion_tokens == CONTEXT
    assert reply.stats.completion_tokens < LONG.max_tokens


def test_a_reply_cut_by_max_tokens_still_says_length(manager, store):
    c = store.create_conversation("short")
    list(manager.reply(c.id, "Count to three.", GREEDY))
    assert store.messages(c.id)[-1].finish_reason == "length"


def test_continue_refused_by_a_full_context_keeps_the_reply_as_it_was(manager, store):
    c = store.create_conversation("count")
    list(manager.reply(c.id, "Count to a thousand.", LONG))
    before = store.messages(c.id)[-1]
    with pytest.raises(ContextOverflowError):
        list(manager.continue_reply(c.id, before.id, LONG))
    after = store.get_message(before.id)
    assert (after.content, after.status, after.finish_reason, after.error) == \
        (before.content, "complete", CONTEXT_FULL, None)
    assert after.token_ids == before.token_ids and after.content  # nothing of it is lost
