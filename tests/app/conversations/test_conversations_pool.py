"""On a backend whose sessions share one K/V pool of tokens (llama.cpp), a turn refused because the
pool is full suspends least recently used idle conversations to disk and runs; a suspended
conversation comes back from its saved state with the tokens it would have had; only when nothing
idle is left does the refusal reach the user."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager
from engine import SamplingParams
from engine.errors import CapacityError
from tests.app.engine_fixtures import make_engine, reply_ids  # noqa: F401 (fixture)
from tests.app.conversations.test_conversations_llamacpp import store, tiny_models  # noqa: F401 (fixtures)

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

PER_TOKEN = 2 * 2 * (16 + 16) * 2  # layers × kv heads × (K + V head dims) × float16 bytes
LONG = SamplingParams(temperature=0, max_tokens=60, ignore_stop=True)
"""Each turn reserves its prompt + 60 tokens: two such conversations fill most of a 256-token pool."""


def _small_pool(make_engine, tiny_models):
    # 300 tokens' worth of budget: a pool of 256 tokens (llama.cpp sizes it in steps of 256)
    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=128, memory_budget=300 * PER_TOKEN)
    assert engine.capacity().pool_tokens == 256
    return engine


def test_a_turn_refused_for_a_full_pool_suspends_idle_conversations_and_runs(make_engine, tiny_models, store):
    engine = _small_pool(make_engine, tiny_models)
    manager = ConversationManager(engine, store)
    a, b, c = (store.create_conversation(t) for t in "abc")
    first = {x.id: reply_ids(manager.reply(x.id, f"{x.title} says hi", LONG))[0] for x in (a, b)}
    with engine.open_session() as probe:  # c's turn alone would fit; beside a and b it cannot
        with pytest.raises(CapacityError, match="K/V pool"):
            reply_ids(probe.chat([{"role": "user", "content": "c says hi"}], LONG))

    got, _ = reply_ids(manager.reply(c.id, "c says hi", LONG))
    assert len(got) == 60
    assert manager.suspends >= 1 and a.id not in manager.live_conversations()  # a was the least recent
    assert store.states.get(a.id, engine.model_fingerprint, engine.template_fingerprint) is not None
    assert [m.status for m in store.messages(c.id)] == ["complete", "complete"]

    # a's next turn restores its saved state (making room again) and says what it would have said.
    second, last = reply_ids(manager.reply(a.id, "a again", SamplingParams(temperature=0, max_tokens=8,
                                                                            ignore_stop=True)))
    assert manager.restores == 1
    assert last.stats.prefilled_tokens < last.stats.prompt_tokens  # restored, not re-prefilled
    assert [m.status for m in store.messages(a.id)] == ["complete"] * 4
    manager.close()

    reference = make_engine(tiny_models["llama"], "llamacpp", max_context=128)  # a roomy pool: never suspended
    with reference.open_session() as s:
        messages = [{"role": "user", "content": "a says hi"}]
        assert reply_ids(s.chat(messages, LONG))[0] == first[a.id]
        messages += [{"role": "assistant", "content": reference.tokenizer.decode(first[a.id], skip_special_tokens=True)},
                     {"role": "user", "content": "a again"}]
        assert reply_ids(s.chat(messages, SamplingParams(temperature=0, max_tokens=8, ignore_stop=True)))[0] == second


def test_the_refusal_reaches_the_user_when_no_idle_conversation_is_left(make_engine, tiny_models, store):
    engine = _small_pool(make_engine, tiny_models)
    manager = ConversationManager(engine, store)
    a, b, c = (store.create_conversation(t) for t in "abc")
    long = SamplingParams(temperature=0, max_tokens=120, ignore_stop=True)
    busy = [manager.reply(x.id, f"{x.title} says hi", long) for x in (a, b)]
    for stream in busy:
        next(stream)  # a and b are generating; each has reserved a whole context, the pool is full
    with pytest.raises(CapacityError, match="K/V pool"):
        reply_ids(manager.reply(c.id, "c says hi", LONG))
    assert manager.live_conversations()[:2] == [a.id, b.id] and manager.suspends == 0  # never a generating one
    assert [m.status for m in store.messages(c.id)] == ["complete", "error"]  # the user sees why
    for stream, x in zip(busy, (a, b)):
        rest, last = reply_ids(stream)  # their replies go on untouched, up to the context's end
        assert last.finish_reason == "length" and store.messages(x.id)[-1].status == "complete"
        assert len(store.messages(x.id)[-1].token_ids) == 128 - last.stats.prompt_tokens
    # Once they are idle, they can make room: c's turn now runs, in the session that was refused.
    assert len(reply_ids(manager.reply(c.id, "c says hi", LONG))[0]) == 60
    assert manager.suspends >= 1 and c.id in manager.live_conversations()
    manager.close()


def test_a_reader_that_stops_early_cancels_the_reply_in_the_engine(make_engine, tiny_models, store):
    engine = _small_pool(make_engine, tiny_models)
    manager = ConversationManager(engine, store)
    a = store.create_conversation("a")
    stream = manager.reply(a.id, "a says hi", SamplingParams(temperature=0, max_tokens=90, ignore_stop=True))
    next(stream)
    stream.close()  # the user pressed Stop
    session = manager.session_for(a.id)
    assert not session.busy and len(session.tokens) < 30 + 90  # stopped, not run to its end
    assert store.messages(a.id)[-1].status == "cancelled"
    manager.close()
