"""Whatever fails in the step loop, every waiting stream ends (with an error) and no session stays busy."""

from __future__ import annotations

import queue
import threading

import pytest

from engine import SamplingParams, Stream
from engine.errors import EngineError, SessionPoisonedError
from tests.engine.hardening_helpers import drain, within
from tests.engine.helpers import token_ids

PROMPTS = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16]]
WAIT_S = 60  # generous: a loaded CI machine may decode a tiny model at a few tokens per second


def greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_stop=True)


def start_together(engine, sessions, lengths):
    """Streams started in one round (the engine thread held while they queue)."""
    gate = threading.Event()
    engine._post(lambda w: gate.wait(30))
    streams = [s.generate(p, greedy(n)) for s, p, n in zip(sessions, PROMPTS, lengths)]
    gate.set()
    return streams


class Boom(BaseException):
    """Not an Exception: what a stray KeyboardInterrupt or SystemExit would do to the engine thread."""


def test_a_failed_batch_split_poisons_the_running_replies(tiny_engine):
    engine = tiny_engine
    worker = engine._worker
    real_split = worker.backend.split
    calls = []

    def split(handle):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("out of memory while splitting")
        return real_split(handle)

    worker.backend.split = split
    sessions = [engine.open_session() for _ in PROMPTS]
    streams = start_together(engine, sessions, [3, 6, 9])
    outcomes = [within(WAIT_S, lambda st=st: drain(st)) for st in streams]
    worker.backend.split = real_split
    # The first to finish changes the batch; splitting it fails: the other two lose their states.
    assert outcomes[0][1] is None and outcomes[0][0][-1].finish_reason == "length"
    for chunks, error in outcomes[1:]:
        assert isinstance(error, SessionPoisonedError) and "out of memory while splitting" in str(error)
    assert not any(s.busy for s in sessions)
    # The finished session lost its state too; its next turn is computed again from its tokens.
    history = sessions[0].tokens
    again = token_ids(sessions[0].generate(history + [20], greedy(5)))
    with engine.open_session() as fresh:
        assert again == token_ids(fresh.generate(history + [20], greedy(5)))
    for s in sessions[1:]:
        with pytest.raises(SessionPoisonedError):
            s.generate([1, 2], greedy(2))
        s.reset()
        assert len(token_ids(s.generate([1, 2], greedy(3)))) == 3
    for s in sessions:
        s.close()


def test_an_error_in_the_step_loop_fails_every_stream_and_the_engine_goes_on(tiny_engine):
    engine = tiny_engine
    worker = engine._worker
    real_round = worker.scheduler.round
    rounds = []

    def round_():
        jobs = real_round()
        rounds.extend(jobs[:1])
        if jobs and len(rounds) == 3:  # the third round with replies running
            raise RuntimeError("scheduler bug")
        return jobs

    worker.scheduler.round = round_
    sessions = [engine.open_session() for _ in PROMPTS]
    streams = start_together(engine, sessions, [8, 8, 8])
    for chunks, error in [within(WAIT_S, lambda st=st: drain(st)) for st in streams]:
        assert isinstance(error, SessionPoisonedError) and "scheduler bug" in str(error)
    worker.scheduler.round = real_round
    assert not any(s.busy for s in sessions)
    for s in sessions:
        s.reset()
        assert len(token_ids(s.generate([1, 2], greedy(3)))) == 3
        s.close()


def test_an_engine_thread_killed_mid_reply_ends_every_stream_by_name(tiny_engine):
    engine = tiny_engine
    worker = engine._worker
    real_round = worker.step_round
    rounds = []

    def step_round():
        rounds.extend(worker.scheduler.round()[:1])
        if worker.busy and len(rounds) == 3:  # the third round with replies running
            raise Boom("the engine thread was interrupted")
        real_round()

    worker.step_round = step_round
    sessions = [engine.open_session() for _ in PROMPTS]
    streams = start_together(engine, sessions, [8, 8, 8])
    for chunks, error in [within(WAIT_S, lambda st=st: drain(st)) for st in streams]:
        assert isinstance(error, EngineError) and "internal error: Boom" in str(error)
    assert engine.closed and "Boom" in engine.failure
    assert not any(s.busy for s in sessions)
    with pytest.raises(EngineError, match="the engine stopped after an internal error"):
        within(5, engine.open_session)
    for s in sessions:
        s.close()


def test_a_stream_whose_engine_thread_is_gone_ends():
    stream = Stream(queue.Queue(), threading.Event(), alive=lambda: False)
    with pytest.raises(EngineError, match="the engine stopped before this reply finished"):
        within(5, lambda: next(stream))
