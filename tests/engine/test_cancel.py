"""Cancel stops at the next token, keeps the session usable, and an abandoned stream never wedges it."""

from __future__ import annotations

import gc
import threading

from engine import SamplingParams
from tests.engine.helpers import prompt_ids, token_ids

LONG = SamplingParams(temperature=0, max_tokens=10_000, ignore_stop=True)


def test_cancel_from_another_thread(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_context=4096)
    with engine.open_session() as s:
        prompt = prompt_ids(engine, "Tell me everything")
        stream = s.generate(prompt, LONG)
        seen = []
        for chunk in stream:
            seen.extend(chunk.token_ids)
            if len(seen) == 5:
                threading.Thread(target=s.cancel).start()
        assert chunk.finish_reason == "cancelled"
        assert 5 <= len(seen) < 200
        assert s.tokens == prompt + seen  # exactly what was produced
        assert not s.busy
        # still usable: the next turn continues from there
        more = token_ids(s.generate(s.tokens + [13], SamplingParams(temperature=0, max_tokens=3, ignore_stop=True)))
        assert len(more) == 3


def test_close_during_generation_cancels_then_frees(tiny_engine):
    s = tiny_engine.open_session()
    stream = s.generate([5, 6, 7], LONG)
    next(stream)
    s.close()
    assert list(stream)[-1].finish_reason == "cancelled"
    assert s.state_nbytes == 0
    assert tiny_engine.capacity().live_sessions == 0


def test_abandoned_stream_does_not_leave_session_busy(tiny_engine):
    with tiny_engine.open_session() as s:
        stream = s.generate([5, 6, 7], LONG)
        next(stream)
        del stream
        gc.collect()
        # the engine cancels at the next token; the session takes a new request right after
        out = s.generate(s.tokens + [8], SamplingParams(temperature=0, max_tokens=2, ignore_stop=True))
        assert len(token_ids(out)) == 2


def test_unread_finished_stream_does_not_block_the_engine(tiny_engine):
    a, b = tiny_engine.open_session(), tiny_engine.open_session()
    a.generate([5, 6, 7], SamplingParams(temperature=0, max_tokens=30, ignore_stop=True))  # never read
    assert len(token_ids(b.generate([8, 9], SamplingParams(temperature=0, max_tokens=30, ignore_stop=True)))) == 30
    a.close()
    b.close()


def test_engine_close_ends_running_replies(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend)
    s = engine.open_session()
    stream = s.generate([5, 6, 7], LONG)
    next(stream)
    engine.close()
    assert list(stream)[-1].finish_reason == "cancelled"


def test_wait_idle_returns_once_a_cancelled_reply_has_ended(tiny_engine):
    with tiny_engine.open_session() as s:
        stream = s.generate([5, 6, 7], LONG)
        next(stream)
        assert not s.wait_idle(timeout=0.01)
        s.cancel()
        assert s.wait_idle(timeout=30)
        assert not s.busy
