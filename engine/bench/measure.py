"""The bench's measurements of one loaded engine: prefill, decode, concurrent decode, time to first
token beside busy sessions.

Below `bench` (the command, which prints the tables) and `bench_llamacpp` (llama.cpp's figures),
which both take them from here, so neither imports the other for them.
"""

from __future__ import annotations

import statistics
import threading
import time

from ..engine import Engine
from ..types import SamplingParams

BUSY = 8
"""Sessions decoding while the time to first token of a new request is measured."""
PREFILL_TEXT = "The quick brown fox jumps over the lazy dog while the band plays on. "



def measure_prefill(engine: Engine, tokens: int = 2000) -> float:
    ids = engine.tokenizer(PREFILL_TEXT * (tokens // 10), add_special_tokens=False).input_ids[:tokens]
    with engine.open_session() as s:
        list(s.generate(ids[:8], SamplingParams(temperature=0, max_tokens=1)))  # warm-up
        s.reset()
        last = list(s.generate(ids, SamplingParams(temperature=0, max_tokens=1)))[-1]
    return last.stats.prefilled_tokens / last.stats.ttft_s


def measure_decode(engine: Engine, tokens: int) -> float:
    with engine.open_session() as s:
        list(s.generate(_prompt(engine, 1), SamplingParams(temperature=0, max_tokens=16, ignore_stop=True)))
        s.reset()  # the first decode steps of a process run cold: warm up, then measure
        last = list(s.generate(_prompt(engine, 0), SamplingParams(temperature=0, max_tokens=tokens, ignore_stop=True)))[-1]
    return last.stats.decode_tok_s


def measure_concurrent(engine: Engine, n: int, tokens: int) -> tuple[float, float]:
    """Aggregate and mean per-session decode tok/s with `n` sessions generating at once.

    Aggregate counts the tokens delivered while all `n` decode (from the last first token to the
    first finish), so the prompts' prefill, one forward each, is not averaged into it.
    """
    sessions = [engine.open_session() for _ in range(n)]
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_stop=True)
    rates: list[float] = [0.0] * n
    arrivals: list[list[float]] = [[] for _ in range(n)]
    streams = [s.generate(_prompt(engine, i), params) for i, s in enumerate(sessions)]

    def drain(i: int) -> None:
        for chunk in streams[i]:
            if chunk.prefill is None:  # prompt progress is not a delivered token
                arrivals[i].append(time.perf_counter())
        rates[i] = chunk.stats.decode_tok_s

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sessions:
        s.close()
    start, end = max(a[0] for a in arrivals), min(a[-1] for a in arrivals)
    delivered = sum(1 for a in arrivals for t in a if start < t <= end)
    aggregate = delivered / (end - start) if end > start else sum(rates)
    return aggregate, sum(rates) / n


def measure_ttft(engine: Engine, busy: int, repeats: int = 3) -> float:
    """Median time to first token of a new request while `busy` other sessions decode."""
    sessions = [engine.open_session() for _ in range(busy)]
    streams = [s.generate(_prompt(engine, i), SamplingParams(temperature=0, max_tokens=2000, ignore_stop=True))
               for i, s in enumerate(sessions)]
    for stream in streams:
        while next(stream).prefill is not None:  # every neighbour is past its prefill and decoding
            pass
    times = []
    with engine.open_session() as s:
        for _ in range(repeats):
            last = list(s.generate(_prompt(engine, 3), SamplingParams(temperature=0, max_tokens=1)))[-1]
            times.append(last.stats.ttft_s)
            s.reset()
    for stream, session in zip(streams, sessions):
        stream.close()
        session.close()
    return statistics.median(times)


def _prompt(engine: Engine, i: int) -> list[int]:
    """Prompts of different lengths, so concurrent sessions are not in lockstep."""
    return engine.tokenizer(PREFILL_TEXT * (1 + i % 4), add_special_tokens=False).input_ids
