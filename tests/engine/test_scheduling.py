"""Several sessions progress fairly, and two engines run at once, each on its own thread and stream."""

from __future__ import annotations

import threading
import time

from engine import SamplingParams
from tests.engine.helpers import prompt_ids, token_ids


def test_long_reply_does_not_stall_a_short_one(tiny_engine):
    engine = tiny_engine
    long_s, short_s = engine.open_session(), engine.open_session()
    long_stream = long_s.generate([5] * 20, SamplingParams(temperature=0, max_tokens=400, ignore_stop=True))
    for _ in range(3):
        next(long_stream)
    short_ids = token_ids(short_s.generate([6] * 700, SamplingParams(temperature=0, max_tokens=5, ignore_stop=True)))
    assert len(short_ids) == 5
    assert long_s.busy, "the short reply (with a prompt longer than one prefill chunk) finished first"
    long_s.close()
    short_s.close()


def test_two_engines_generate_at_the_same_time(make_engine, tiny_models, backend):
    engines = [make_engine(tiny_models["llama"], backend), make_engine(tiny_models["qwen3"], backend)]
    params = SamplingParams(temperature=0, max_tokens=64, ignore_stop=True)
    solo, threads_used = [], []
    for engine in engines:
        with engine.open_session() as s:
            solo.append(token_ids(s.generate(prompt_ids(engine, "Once upon a time"), params)))
        worker = engine._worker
        real = worker.backend.forward
        used: set = set()
        threads_used.append(used)

        def forward(state, ids, real=real, used=used):
            used.add(threading.current_thread().name)
            time.sleep(0.002)  # make overlap observable even when a step is very fast
            return real(state, ids)

        worker.backend.forward = forward
        if hasattr(worker.backend, "step"):  # llama.cpp steps each round in one call

            def step(items, real=worker.backend.step, used=used):
                used.add(threading.current_thread().name)
                time.sleep(0.002)
                return real(items)

            worker.backend.step = step

    spans, results = [None, None], [None, None]

    def run(i):
        with engines[i].open_session() as s:
            start = time.perf_counter()
            results[i] = token_ids(s.generate(prompt_ids(engines[i], "Once upon a time"), params))
            spans[i] = (start, time.perf_counter())

    workers = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert results == solo
    (a0, a1), (b0, b1) = spans
    assert a0 < b1 and b0 < a1, "the two engines did not run concurrently"
    assert threads_used[0] == {engines[0]._thread.name} and threads_used[1] == {engines[1]._thread.name}
    assert engines[0]._thread is not engines[1]._thread
    streams = [getattr(e._worker.backend, "_stream", None) for e in engines]
    if backend == "mlx":
        assert streams[0] is not None and streams[0] != streams[1]
