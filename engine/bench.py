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

from . import Engine, EngineConfig, SamplingParams
from .errors import EngineError

BUSY = 8
"""Sessions decoding while the time to first token of a new request is measured."""
PREFILL_TEXT = "The quick brown fox jumps over the lazy dog while the band plays on. "


def run_bench(args: argparse.Namespace) -> int:
    counts = [int(n) for n in args.sessions.split(",") if n.strip()]
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    try:
        started = time.perf_counter()
        engine = Engine.load(args.model, EngineConfig(backend=args.backend, dtype=args.dtype))
        load_s = time.perf_counter() - started
    except EngineError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    with engine:
        say(f"loaded {engine.model.name} on {engine.backend}/{engine.device} ({engine.dtype}) in {load_s:.1f} s")
        prefill = measure_prefill(engine)
        say(f"prefill: {prefill:.0f} tok/s")
        decode = measure_decode(engine, args.tokens)
        say(f"decode, one session: {decode:.1f} tok/s")
        aggregate, per_session, unbatched = {}, {}, {}
        # The same work with the scheduler forced to one session a forward (max_batch=1), measured
        # right after each batched figure: on a shared machine, only figures taken close together compare.
        config = EngineConfig(backend=args.backend, dtype=args.dtype, max_batch=1)
        with Engine.load(args.model, config) as solo_engine:
            measure_decode(solo_engine, 8)  # warm-up
            for n in counts:
                aggregate[n], per_session[n] = measure_concurrent(engine, n, args.tokens)
                unbatched[n] = measure_concurrent(solo_engine, n, args.tokens)[0]
                say(f"{n} sessions: {aggregate[n]:.1f} tok/s in aggregate, {per_session[n]:.1f} per session; "
                    f"unbatched {unbatched[n]:.1f}")
        ttft_idle = measure_ttft(engine, busy=0)
        ttft_busy = measure_ttft(engine, busy=BUSY)
        say(f"time to first token: {ttft_idle:.3f} s idle, {ttft_busy:.3f} s while {BUSY} sessions decode")
        say("plain library path...")
        library = library_decode_tok_s(engine, args.tokens)
        cap = engine.capacity()
        figures = {
            "model": engine.model.name,
            "backend": engine.backend,
            "device": engine.device,
            "dtype": engine.dtype,
            "load_s": round(load_s, 2),
            "prefill_tok_s": round(prefill, 1),
            "decode_tok_s": round(decode, 2),
            "aggregate_tok_s": {str(n): round(v, 2) for n, v in aggregate.items()},
            "per_session_tok_s": {str(n): round(v, 2) for n, v in per_session.items()},
            "unbatched_aggregate_tok_s": {str(n): round(v, 2) for n, v in unbatched.items()},
            "ttft_idle_s": round(ttft_idle, 4),
            "ttft_busy8_s": round(ttft_busy, 4),
            "library_decode_tok_s": round(library, 2),
            "decode_vs_library": round(decode / library, 3) if library else None,
            "weights_bytes": cap.weights_bytes,
            "bytes_per_session": cap.bytes_per_session,
            "max_context": engine.config.max_context,
            "peak_rss_bytes": peak_rss_bytes(),
        }
    if args.json:
        print(json.dumps(figures))
    else:
        print_table(figures)
    return 0


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


def library_decode_tok_s(engine: Engine, tokens: int) -> float:
    """The same single-session workload through transformers' generate or mlx_lm.stream_generate."""
    if engine.backend == "mlx":
        return _mlx_library(engine, tokens)
    return _torch_library(engine, tokens)


def _torch_library(engine: Engine, tokens: int) -> float:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    model = AutoModelForCausalLM.from_pretrained(engine.model.path, dtype=getattr(torch, engine.dtype))
    model = model.to(engine.device).eval()
    ids = torch.tensor([_prompt(engine, 0)], device=engine.device)

    def timed(n: int) -> float:
        started = time.perf_counter()
        with torch.inference_mode():
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
        return time.perf_counter() - started

    timed(2)  # warm-up
    one, full = timed(1), timed(tokens)
    return (tokens - 1) / (full - one)


def _mlx_library(engine: Engine, tokens: int) -> float:
    import mlx_lm

    from .backends.mlx import _rope_compat

    model, tokenizer = mlx_lm.load(str(engine.model.path), model_config=_rope_compat(engine.model.config))
    prompt = _prompt(engine, 0)
    list(mlx_lm.stream_generate(model, tokenizer, prompt, max_tokens=2))  # warm-up
    last = None
    for last in mlx_lm.stream_generate(model, tokenizer, prompt, max_tokens=tokens):
        pass
    return last.generation_tps


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
