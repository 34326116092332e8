"""On a backend whose sessions share one K/V pool of tokens (llama.cpp), a turn that does not fit
beside idle conversations runs (the engine parks them to disk); a parked conversation comes back
with the tokens it would have had; a turn beside running ones waits for room and completes."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager
from engine import SamplingParams
from tests.app.engine_fixtures import make_engine, reply_ids  # noqa: F401 (fixture)
from tests.app.conversations.test_conversations_llamacpp import tiny_models  # noqa: F401 (fixture)
from tests.conftest import HEAD_DIM

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

PER_TOKEN = 2 * 2 * (HEAD_DIM + HEAD_DIM) * 2  # layers × kv heads × (K + V head dims) × float16 bytes
LONG = SamplingParams(temperature=0, max_tokens=60, ignore_stop=True)
"""Each turn holds its prompt + 60 tokens: three such conversations do not fit a 256-token pool."""


def _small_pool(make_engine, tiny_models):
    # 300 tokens' worth of budget: a pool of 256 tokens (llama.cpp sizes it in steps of 256)
    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=128, memory_budget=300 * PER_TOKEN)
    assert engine.capacity().pool_tokens == 256
    return engine


def test_a_turn_beside_idle_conversations_parks_them_and_runs(make_engine, tiny_models, store):
    engine = _small_pool(make_engine, tiny_models)
    manager = ConversationManager(engine, store)
    a, b, c = (store.create_conversation(t) for t in "abc")
    first = {x.id: reply_ids(manager.reply(x.id, f"{x.title} says hi", LONG))[0] for x in (a, b)}
    got, _ = reply_ids(manager.reply(c.id, "c says hi", LONG))  # beside a and b it does not fit: a parks
    assert len(got) == 60
    assert engine._worker.room.parks >= 1
    assert [m.status for m in store.messages(c.id)] == ["complete", "complete"]

    # a's next turn brings its parked state back (making room again) and says what it would have said.
    second, last = reply_ids(manager.reply(a.id, "a again", SamplingParams(temperature=0, max_tokens=8,
                                                                            ignore_stop=True)))
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


def test_a_turn_beside_running_ones_waits_for_room_and_completes(make_engine, tiny_models, store):
    engine = _small_pool(make_engine, tiny_models)
    manager = ConversationManager(engine, store)
    a, b, c = (store.create_conversation(t) for t in "abc")
    long = SamplingParams(temperature=0, max_tokens=120, ignore_stop=True)
    busy = [manager.reply(x.id, f"{x.title} says hi", long) for x in (a, b)]
    for stream in busy:
        next(stream)  # a and b are generating; together they will fill the pool to the context's end
    got, _ = reply_ids(manager.reply(c.id, "c says hi", LONG))  # admitted; paused while the older ones grow
    assert len(got) == 60 and [m.status for m in store.messages(c.id)] == ["complete", "complete"]
    for stream, x in zip(busy, (a, b)):
        rest, last = reply_ids(stream)  # their replies go on untouched, up to the context's end
        assert last.finish_reason == "length" and store.messages(x.id)[-1].status == "complete"
        assert len(store.messages(x.id)[-1].token_ids) == 128 - last.stats.prompt_tokens
    assert manager.suspends == 0  # the engine made room; nothing was refused to the user
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
