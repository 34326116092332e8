"""`python -m engine bench`: the engine's speed, and the plain library's on the same work, in one run.

Figures are printed, never asserted: these machines are shared and noisy, so only ratios taken in
the same run mean much.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

from . import Engine, EngineConfig, SamplingParams, backends
from .bench_context import context_figures, context_rows
from .bench_library import LibraryModel
from .errors import EngineError

BUSY = 8
"""Sessions decoding while the time to first token of a new request is measured."""
PREFILL_TEXT = "The quick brown fox jumps over the lazy dog while the band plays on. "


def run_bench(args: argparse.Namespace) -> int:
    counts = [int(n) for n in args.sessions.split(",") if n.strip()]
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    names = backends.installed() if args.backend == "all" else [args.backend]
    if not names:
        print("error: neither torch nor mlx is installed", file=sys.stderr)
        return 1
    results = {}
    for name in names:
        try:
            results[name] = bench_backend(args.model, name, args.dtype, counts, args.tokens, say,
                                          getattr(args, "long_context", 4000))
        except EngineError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    if args.json:
        # One backend: its figures; several: a map from backend to its figures.
        print(json.dumps(results[names[0]] if len(names) == 1 else results))
        return 0
    for i, figures in enumerate(results.values()):
        if i:
            print()
        print_table(figures)
    return 0


def bench_backend(
    model: str, backend: str, dtype: str, counts: list[int], tokens: int, say, long_context: int = 4000
) -> dict:
    """Every figure for one backend. Raises EngineError when the model does not load on it."""
    started = time.perf_counter()
    engine = Engine.load(model, EngineConfig(backend=backend, dtype=dtype))
    load_s = time.perf_counter() - started
    with engine:
        say(f"loaded {engine.model.name} on {engine.backend}/{engine.device} ({engine.dtype}) in {load_s:.1f} s")
        prefill = measure_prefill(engine)
        say(f"prefill: {prefill:.0f} tok/s")
        decode = measure_decode(engine, tokens)
        say(f"decode, one session: {decode:.1f} tok/s")
        by_context = context_figures(engine, say, long_context)
        aggregate, per_session, unbatched = {}, {}, {}
        # The same work with the scheduler forced to one session a forward (max_batch=1), measured
        # right after each batched figure: on a shared machine, only figures taken close together compare.
        config = EngineConfig(backend=backend, dtype=dtype, max_batch=1)
        with Engine.load(model, config) as solo_engine:
            measure_decode(solo_engine, 8)  # warm-up
            for n in counts:
                aggregate[n], per_session[n] = measure_concurrent(engine, n, tokens)
                unbatched[n] = measure_concurrent(solo_engine, n, tokens)[0]
                say(f"{n} sessions: {aggregate[n]:.1f} tok/s in aggregate, {per_session[n]:.1f} per session; "
                    f"unbatched {unbatched[n]:.1f}")
        ttft_idle = measure_ttft(engine, busy=0)
        ttft_busy = measure_ttft(engine, busy=BUSY)
        say(f"time to first token: {ttft_idle:.3f} s idle, {ttft_busy:.3f} s while {BUSY} sessions decode")
        say("plain library path...")
        library = LibraryModel(engine)
        library_decode = library.decode_tok_s(_prompt(engine, 0), tokens)
        library_batch = {n: library.batch_tok_s(_prompt(engine, 0), n, tokens) for n in counts}
        say("plain library loop: " + ", ".join(f"{n} rows {v:.1f} tok/s" for n, v in library_batch.items()))
        linear_cost = library.linear_row_cost(BUSY)
        del library
        cap = engine.capacity()
        return {
            "model": engine.model.name,
            "backend": engine.backend,
            "device": engine.device,
            "dtype": engine.dtype,
            "load_s": round(load_s, 2),
            "prefill_tok_s": round(prefill, 1),
            "decode_tok_s": round(decode, 2),
            "aggregate_tok_s": _rounded(aggregate),
            "per_session_tok_s": _rounded(per_session),
            "unbatched_aggregate_tok_s": _rounded(unbatched),
            "library_aggregate_tok_s": _rounded(library_batch),
            "ttft_idle_s": round(ttft_idle, 4),
            "ttft_busy8_s": round(ttft_busy, 4),
            "library_decode_tok_s": round(library_decode, 2),
            "linear_8_rows_cost": round(linear_cost, 2) if linear_cost == linear_cost else None,  # NaN: none
            "decode_vs_library": round(decode / library_decode, 3) if library_decode else None,
            "weights_bytes": cap.weights_bytes,
            "bytes_per_session": cap.bytes_per_session,
            "max_context": engine.config.max_context,
            "peak_rss_bytes": peak_rss_bytes(),
            **by_context,
        }


def _rounded(figures: dict[int, float]) -> dict[str, float]:
    return {str(n): round(v, 2) for n, v in figures.items()}


def measure_prefill(engine: Engine, tokens: int = 480) -> float:
    ids = engine.tokenizer(PREFILL_TEXT * 40, add_special_tokens=False).input_ids[:tokens]
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
        next(stream)  # every neighbour is past its prefill and decoding
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


def peak_rss_bytes() -> int:
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux
    except ImportError:  # Windows
        import psutil

        return getattr(psutil.Process().memory_info(), "peak_wset", 0)


def print_table(f: dict) -> None:
    rows = [
        ("model", f"{f['model']} on {f['backend']}/{f['device']} ({f['dtype']})"),
        ("load", f"{f['load_s']:.2f} s"),
        ("prefill", f"{f['prefill_tok_s']:.0f} tok/s"),
        ("decode, 1 session", f"{f['decode_tok_s']:.1f} tok/s"),
        ("plain library decode", f"{f['library_decode_tok_s']:.1f} tok/s (engine ÷ library = {f['decode_vs_library']})"),
        *context_rows(f),
    ]
    one = f["aggregate_tok_s"].get("1")
    for n, v in f["aggregate_tok_s"].items():
        unbatched = f["unbatched_aggregate_tok_s"][n]
        rows.append((
            f"{n} sessions",
            f"{v:.1f} tok/s aggregate ({v / one:.1f}× 1 session)" if one else f"{v:.1f} tok/s aggregate",
        ))
        rows.append(("", f"{f['per_session_tok_s'][n]:.1f} per session; unbatched {unbatched:.1f} aggregate, "
                         f"batched ÷ unbatched = {v / unbatched:.2f}"))
        library = f["library_aggregate_tok_s"][n]
        rows.append(("", f"plain library loop {library:.1f} tok/s over {n} rows (engine ÷ library = {v / library:.2f})"))
    if f["linear_8_rows_cost"] is not None:
        rows.append((f"linear, {BUSY} rows", f"{f['linear_8_rows_cost']:.1f}× the time of 1 row "
                                             "(the most batching can gain is about rows ÷ this)"))
    ratio = f["ttft_busy8_s"] / f["ttft_idle_s"]
    rows += [
        ("first token, idle", f"{f['ttft_idle_s']:.3f} s"),
        (f"first token, {BUSY} busy", f"{f['ttft_busy8_s']:.3f} s ({ratio:.2f}× idle)"),
    ]
    rows += [
        ("weights", f"{f['weights_bytes'] / 2**20:.1f} MiB"),
        ("per session", f"{f['bytes_per_session'] / 2**20:.1f} MiB at max_context {f['max_context']}"),
        ("peak RSS", f"{f['peak_rss_bytes'] / 2**20:.0f} MiB"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
