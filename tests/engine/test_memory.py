"""Weights once, state per session, no hidden default copy: N sessions hold N states, not N+1."""

from __future__ import annotations

from engine import SamplingParams
from tests.engine.helpers import prompt_ids, token_ids
from tests.engine.memory_probe import allocated_bytes

PARAMS = SamplingParams(temperature=0, max_tokens=16, ignore_stop=True)


def test_state_memory_is_the_sum_of_session_states(tiny_engine, backend):
    engine = tiny_engine
    base = allocated_bytes(backend)
    sessions = [engine.open_session() for _ in range(3)]
    assert all(s.state_nbytes == 0 for s in sessions)  # allocated on first use
    assert allocated_bytes(backend) - base < 64 * 1024
    for n, s in enumerate(sessions, start=1):
        token_ids(s.generate(prompt_ids(engine, "word " * (10 * n)), PARAMS))
        measured = allocated_bytes(backend) - base
        states = sum(x.state_nbytes for x in sessions)
        assert states > 0
        # N sessions hold N states: a hidden default copy would add a whole extra state.
        assert abs(measured - states) <= max(0.05 * states, 64 * 1024), (n, measured, states)


def test_state_grows_with_content_and_reset_close_free_it(tiny_engine, backend):
    engine = tiny_engine
    base = allocated_bytes(backend)
    s = engine.open_session()
    token_ids(s.generate(prompt_ids(engine, "short"), PARAMS))
    small = s.state_nbytes
    token_ids(s.generate(s.tokens + prompt_ids(engine, " and much longer " * 100), PARAMS))
    assert s.state_nbytes > small
    s.reset()
    assert s.state_nbytes == 0 and s.tokens == []
    assert allocated_bytes(backend) - base < 64 * 1024
    token_ids(s.generate(prompt_ids(engine, "again"), PARAMS))
    assert s.state_nbytes > 0
    s.close()
    assert s.state_nbytes == 0
    assert allocated_bytes(backend) - base < 64 * 1024


def test_weights_are_loaded_once(tiny_engine, backend):
    weights = tiny_engine.capacity().weights_bytes
    before = allocated_bytes(backend)
    sessions = [tiny_engine.open_session() for _ in range(4)]
    assert allocated_bytes(backend) - before < weights / 10
    for s in sessions:
        s.close()


def test_sessions_decoded_together_hold_their_own_states_once_done(tiny_engine, backend):
    engine = tiny_engine
    base = allocated_bytes(backend)
    sessions = [engine.open_session() for _ in range(3)]
    streams = [s.generate(prompt_ids(engine, "word " * (10 * n)), PARAMS) for n, s in enumerate(sessions, 1)]
    for stream in streams:
        token_ids(stream)
    engine._call(lambda w: None)  # the round that delivered the last token has finished
    measured = allocated_bytes(backend) - base
    states = sum(x.state_nbytes for x in sessions)
    assert abs(measured - states) <= max(0.05 * states, 64 * 1024), (measured, states)  # no padded batch left
    for s in sessions:
        s.close()
    assert allocated_bytes(backend) - base < 64 * 1024
