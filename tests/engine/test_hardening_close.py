"""Closing an engine under its callers, and failed or interrupted loads: every call ends, by name."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from engine import Engine, EngineConfig, SamplingParams
from engine.errors import EngineError, ModelLoadError
from engine.runner import Runner
from tests.engine.hardening_helpers import drain, engine_threads, within

PARAMS = SamplingParams(temperature=0, max_tokens=6, ignore_stop=True)


def _race_one_close(engine: Engine, callers: int) -> list[BaseException]:
    """`callers` threads use the engine while the test thread closes it; returns unexpected errors."""
    sessions = [engine.open_session() for _ in range(callers // 4 + 1)]
    start = threading.Barrier(callers + 1)
    unexpected: list[BaseException] = []

    def caller(i: int) -> None:
        s = sessions[i // 4]
        start.wait()
        try:
            op = i % 4
            if op == 0:
                chunks, error = drain(s.generate([5, 6, 7], PARAMS))
                if error is not None:
                    raise error
                assert chunks[-1].finish_reason in ("length", "cancelled")
            elif op == 1:
                s.close()
            elif op == 2:
                s.reset()
            else:
                engine.open_session().close()
        except EngineError:
            pass  # "the engine is closed", "session 3 is closed", busy: all named
        except BaseException as e:  # anything else escaped unnamed
            unexpected.append(e)

    threads = [threading.Thread(target=caller, args=(i,), daemon=True) for i in range(callers)]
    for t in threads:
        t.start()
    start.wait()
    engine.close()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads), "a caller was still blocked 5 s after close()"
    return unexpected


def test_runner_requests_racing_stop_all_end():
    """The engine thread's queue alone, 20 trials x 100 callers: each request runs or is refused."""

    class Idle:
        busy = False

        def step_round(self): ...

        def shutdown(self, failure=None): ...

    for _ in range(20):
        runner = Runner("confab-engine-test", Idle)
        runner.start()
        runner.loaded.result()
        start = threading.Barrier(101)
        outcomes: list[str] = []

        def caller() -> None:
            start.wait()
            try:
                outcomes.append(runner.call(lambda w: "ran"))
            except EngineError as e:
                outcomes.append(str(e))

        threads = [threading.Thread(target=caller, daemon=True) for _ in range(100)]
        for t in threads:
            t.start()
        start.wait()
        runner.stop()
        for t in threads:
            t.join(5)
        assert not any(t.is_alive() for t in threads)
        assert set(outcomes) <= {"ran", "the engine is closed"} and len(outcomes) == 100
        runner.thread.join(5)
        assert not runner.thread.is_alive()


def test_callers_racing_close_never_block(make_engine, tiny_models, backend):
    for _ in range(3):
        engine = make_engine(tiny_models["llama"], backend)
        assert _race_one_close(engine, 100) == []


def test_calls_after_close_fail_by_name(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend)
    s = engine.open_session()
    engine.close()
    for call in (engine.open_session, s.reset, lambda: s.generate([1, 2], PARAMS), engine.capacity,
                 lambda: engine.backend):
        with pytest.raises(EngineError, match="the engine is closed"):
            within(5, call)
    s.close()  # idempotent after the engine is gone
    assert engine.closed and engine.failure is None


def test_failed_load_leaves_nothing_running(tmp_path):
    before = engine_threads()
    with pytest.raises(ModelLoadError, match="does not exist"):
        Engine.load(str(tmp_path / "missing"))
    for t in engine_threads() - before:
        t.join(5)
    assert not engine_threads() - before


def test_a_failed_engine_object_fails_every_call_by_name(tmp_path):
    engine = Engine(str(tmp_path / "missing"), EngineConfig(), None)
    engine._runner.start()
    with pytest.raises(ModelLoadError):
        engine._runner.loaded.result(timeout=30)
    for call in (engine.open_session, lambda: engine.backend, engine.capacity):
        with pytest.raises(EngineError, match="the engine failed to load: model not found"):
            within(5, call)
    assert engine.closed and "model not found" in engine.failure
    engine.close()


def test_interrupted_load_stops_its_thread(tiny_models, backend):
    """Ctrl+C while Engine.load waits: the load finishes on its thread, then the thread ends."""
    before = engine_threads()

    def interrupt(fraction: float, message: str) -> None:
        if fraction == 0.0:
            os.kill(os.getpid(), signal.SIGINT)

    # Ctrl+C as a terminal delivers it: to this (main) thread, through Python's own handler. In the
    # whole suite's one process an earlier test's library may have changed either (in one full run
    # the interrupt never arrived, for all three backends, while this file alone passed).
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        with pytest.raises(KeyboardInterrupt):
            Engine.load(str(tiny_models["llama"]), EngineConfig(backend=backend, dtype="float32"), progress=interrupt)
    finally:
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    started = engine_threads() - before
    for t in started:
        t.join(20)
    assert not any(t.is_alive() for t in started)
