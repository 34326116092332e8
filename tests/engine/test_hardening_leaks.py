"""Dropped handles and closed engines give their memory back: slots, states, threads and weights."""

from __future__ import annotations

import gc
import weakref

from engine import Engine, EngineConfig, SamplingParams
from tests.engine.hardening_helpers import within
from tests.engine.helpers import token_ids

PARAMS = SamplingParams(temperature=0, max_tokens=3, ignore_stop=True)


def _load(source, backend) -> Engine:
    return Engine.load(str(source), EngineConfig(backend=backend, dtype="float32", max_context=256))


def test_dropped_session_handles_free_their_slots(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_sessions=4)
    for _ in range(4):
        s = engine.open_session()
        token_ids(s.generate([5, 6, 7], PARAMS))
        del s  # dropped without close()
    gc.collect()
    survivor = within(30, engine.open_session)  # the finalizers' closes run before this open
    assert engine.capacity().live_sessions == 1
    survivor.close()


def test_a_session_dropped_mid_reply_is_closed_once_the_reply_ends(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_sessions=1)
    s = engine.open_session()
    stream = s.generate([5, 6, 7], SamplingParams(temperature=0, max_tokens=200, ignore_stop=True))
    del s, stream  # the dropped stream cancels the reply; the reply's end releases the handle
    gc.collect()
    for _ in range(200):
        engine._call(lambda w: None)  # let a round pass
        gc.collect()
        if engine.capacity().live_sessions == 0:
            break
    assert engine.capacity().live_sessions == 0
    engine.open_session().close()


def test_close_frees_the_weights_whatever_handles_remain(tiny_models, backend, source_for):
    engine = _load(source_for(tiny_models["llama"], backend), backend)
    weights = weakref.ref(engine._worker.backend)
    session = engine.open_session()
    token_ids(session.generate([5, 6, 7], PARAMS))
    engine.close()
    gc.collect()
    assert weights() is None
    assert session.tokens  # the handle still answers what it can


def test_a_dropped_engine_stops_its_thread_and_frees_the_weights(tiny_models, backend, source_for):
    engine = _load(source_for(tiny_models["llama"], backend), backend)
    weights = weakref.ref(engine._worker.backend)
    thread = engine._runner.thread
    with engine.open_session() as s:
        token_ids(s.generate([5, 6, 7], PARAMS))
    del engine, s
    gc.collect()
    thread.join(30)
    assert not thread.is_alive()
    gc.collect()
    assert weights() is None


def test_switching_models_returns_the_old_models_memory(tiny_models, backend, source_for):
    """What the app's model switch does: load the new engine, close the old one."""
    old = _load(source_for(tiny_models["llama"], backend), backend)
    old_weights = weakref.ref(old._worker.backend)
    new = _load(source_for(tiny_models["qwen3"], backend), backend)
    old.close()
    gc.collect()
    assert old_weights() is None
    with new.open_session() as s:
        assert len(token_ids(s.generate([5, 6, 7], PARAMS))) == 3
    new.close()
