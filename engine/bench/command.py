"""`python -m engine bench`: the engine's speed, and the plain library's on the same work, in one run.

Figures are printed, never asserted: these machines are shared and noisy, so only ratios taken in
the same run mean much.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable, Optional

from .. import Engine, EngineConfig, backends
from .bf16 import bf16_figures
from .contended import decode_contended, decode_two_procs
from .context import context_figures, context_rows
from .library import LibraryModel
from .llamacpp import llamacpp_figures, print_llamacpp_table
from .measure import BUSY, _prompt, measure_concurrent, measure_decode, measure_prefill, measure_ttft
from ..errors import EngineError


def _report(figures: Callable[[], dict], as_json: bool, show: Optional[Callable[[dict], None]] = None,
            errors: tuple[type[BaseException], ...] = (EngineError,)) -> int:
    """Run one bench's `figures()` and print them: one JSON line with --json, else `show(figures)`
    (indented JSON by default); an error is one line on stderr and exit status 1."""
    try:
        result = figures()
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(result))
    else:
        (show or (lambda f: print(json.dumps(f, indent=1))))(result)
    return 0


DEFAULT_SESSIONS = "1,2,4,8,16"
AGENT_SESSIONS = 8
"""`--agents` without `--sessions`: the eight sub-agents its targets are set for (issue 39)."""


def run_bench(args: argparse.Namespace) -> int:
    counts = [int(n) for n in (args.sessions or DEFAULT_SESSIONS).split(",") if n.strip()]
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    # progress to stderr even with --json (stdout holds only the figures): these runs take minutes
    progress = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    if getattr(args, "retrieval", False):
        from ..embeddings import DEFAULT_EMBEDDING_MODEL
        from .retrieval import run_retrieval_bench

        return run_retrieval_bench(args.embedding_model or DEFAULT_EMBEDDING_MODEL, args.json)
    if getattr(args, "speculative", False):
        from .speculative import EDIT_TOKENS, speculative_figures

        args.tokens = args.tokens or EDIT_TOKENS
        return _report(lambda: speculative_figures(args.model, say, tokens=args.tokens, draft_model=args.draft_model),
                       args.json, lambda f: print("\n".join(f"{k}: {v}" for k, v in f.items())))
    if getattr(args, "agents", False):
        from .agents import agents_figures

        sessions = max(counts) if args.sessions else AGENT_SESSIONS
        return _report(lambda: agents_figures(args.model, say, sessions, args.agent_prefix_tokens,
                                              args.agent_task_tokens), args.json)
    if getattr(args, "agent_loop", False):
        from .agent_loop import agent_loop_figures

        return _report(lambda: agent_loop_figures(args.model, progress), args.json)
    if getattr(args, "repetition", False):
        from .repetition import print_table as print_repetition, repetition_figures

        backend = args.backend[0] if args.backend != ["all"] else "auto"
        return _report(lambda: repetition_figures(args.model, progress, backend=backend, prompts=args.prompts,
                                                  tokens=args.tokens or 256), args.json, print_repetition)
    args.tokens = args.tokens or 64
    if getattr(args, "vision", False):
        from ..models import DEFAULT_MODEL
        from .vision import vision_figures

        return _report(lambda: vision_figures(None if args.model == DEFAULT_MODEL else args.model, say, args.tokens),
                       args.json)
    if getattr(args, "vs_server", None):
        from .vs_server import vs_server

        prompts = [int(n) for n in args.prompt_tokens.split(",") if n.strip()]
        return _report(lambda: vs_server(args.vs_server, args.model, args.vs_model, counts, args.tokens, prompts,
                                         progress, rounds=args.rounds, context=getattr(args, "vs_context", None)),
                       args.json, errors=(EngineError, RuntimeError, OSError, ValueError))
    names = _backend_names(args.backend, args.model)
    if not names:
        print("error: no backend is installed that can load this model", file=sys.stderr)
        return 1
    results = {}
    for name in names:
        try:
            if name == "llamacpp":
                results[name] = llamacpp_figures(args.model, counts, args.tokens, say,
                                                 contended=getattr(args, "contended", False),
                                                 prefill_tokens=getattr(args, "prefill_tokens", 2000))
            else:
                results[name] = bench_backend(args.model, name, args.dtype, counts, args.tokens, say,
                                              contended=getattr(args, "contended", False),
                                              prefill_tokens=getattr(args, "prefill_tokens", 2000),
                                              long_context=getattr(args, "long_context", 4000))
        except EngineError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    if "llamacpp" in results and "torch" in results:  # the same run: llama.cpp against torch's auto
        torch_decode = results["torch"]["decode_tok_s"]
        results["llamacpp"]["torch_decode_tok_s"] = torch_decode
        results["llamacpp"]["decode_vs_torch"] = round(results["llamacpp"]["decode_tok_s"] / torch_decode, 2)
    if args.json:  # one JSON object per line, per backend, each with its "backend" key
        for figures in results.values():
            print(json.dumps(figures))
        return 0
    for i, figures in enumerate(results.values()):
        if i:
            print()
        (print_llamacpp_table if figures["backend"] == "llamacpp" else print_table)(figures)
    return 0


def _backend_names(asked, model: str) -> list[str]:
    """The backends to bench, in order: "all" is every installed one that can load `model` (llama.cpp
    loads only .gguf files); "auto" is what Engine.load would pick."""
    from ..models.sources import locate

    asked = asked.split(",") if isinstance(asked, str) else list(asked)
    try:
        kind = locate(model)[0]
    except EngineError:
        kind = "folder"  # the load reports the bad model by name
    names: list[str] = []
    for name in asked:
        if name == "all":
            found = backends.installed()
            if kind != "gguf" or backends.llamacpp_error() is not None:
                found = [b for b in found if b != "llamacpp"]
            names += found
        elif name == "auto":
            names.append(backends.choose("auto", kind)[0])
        else:
            names.append(name)
    return list(dict.fromkeys(names))


def bench_backend(model: str, backend: str, dtype: str, counts: list[int], tokens: int, say,
                  contended: bool = False, prefill_tokens: int = 2000, long_context: int = 4000) -> dict:
    """Every figure for one backend. Raises EngineError when the model does not load on it.
    contended: also decode beside a busy process and beside a second engine process."""
    started = time.perf_counter()
    engine = Engine.load(model, EngineConfig(backend=backend, dtype=dtype))
    load_s = time.perf_counter() - started
    with engine:
        say(f"loaded {engine.model.name} on {engine.backend}/{engine.device} ({engine.dtype}) in {load_s:.1f} s")
        say(f"dtype {engine.dtype_reason}" + (f"; {engine.quantized}" if engine.quantized else ""))
        prefill = measure_prefill(engine, prefill_tokens)
        say(f"prefill: {prefill:.0f} tok/s")
        decode = measure_decode(engine, tokens)
        say(f"decode, one session: {decode:.1f} tok/s")
        by_context = context_figures(engine, say, long_context)
        extra = {}
        if contended:
            extra["decode_tok_s_contended"] = round(decode_contended(engine, tokens, measure_decode), 2)
            say(f"decode beside a busy core: {extra['decode_tok_s_contended']:.1f} tok/s")
            extra["decode_tok_s_two_procs"] = round(decode_two_procs(model, backend, dtype, tokens), 2)
            say(f"decode, two engine processes at once: {extra['decode_tok_s_two_procs']:.1f} tok/s (slower)")
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
        extra.update(bf16_figures(model, backend, tokens, lambda e: measure_prefill(e, prefill_tokens),
                                  measure_decode, measure_concurrent))
        if "decode_tok_s_bf16" in extra:
            say(f"dense bfloat16: prefill {extra['prefill_tok_s_bf16']:.0f} tok/s, decode "
                f"{extra['decode_tok_s_bf16']:.1f}, {BUSY} sessions {extra['aggregate8_tok_s_bf16']:.1f} tok/s")
        return {
            "model": engine.model.name,
            "backend": engine.backend,
            "device": engine.device,
            "dtype": engine.dtype,
            "dtype_reason": engine.dtype_reason,
            "quantized": engine.quantized,
            "load_s": round(load_s, 2),
            "prefill_tok_s": round(prefill, 1),
            "prefill_tokens": prefill_tokens,
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
            **extra,
        }


def _rounded(figures: dict[int, float]) -> dict[str, float]:
    return {str(n): round(v, 2) for n, v in figures.items()}


def peak_rss_bytes() -> int:
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux
    except ImportError:  # Windows
        import psutil

        return getattr(psutil.Process().memory_info(), "peak_wset", 0)


def comparison_rows(f: dict) -> list[tuple[str, str]]:
    """Rows for the figures only some runs have: beside a busy neighbour, and against dense bfloat16."""
    rows = []
    quiet = f["decode_tok_s"]
    if "decode_tok_s_contended" in f:
        rows.append(("decode, busy core beside", f"{f['decode_tok_s_contended']:.1f} tok/s "
                                                 f"({f['decode_tok_s_contended'] / quiet:.2f}× quiet)"))
        rows.append(("decode, 2 engine procs", f"{f['decode_tok_s_two_procs']:.1f} tok/s, the slower "
                                               f"({f['decode_tok_s_two_procs'] / quiet:.2f}× quiet)"))
    if "decode_tok_s_bf16" in f:
        one8 = f["aggregate_tok_s"].get(str(BUSY))
        rows += [
            ("dense bfloat16", f"prefill {f['prefill_tok_s_bf16']:.0f} tok/s "
                               f"(auto ÷ bf16 = {f['prefill_tok_s'] / f['prefill_tok_s_bf16']:.2f})"),
            ("", f"decode {f['decode_tok_s_bf16']:.1f} tok/s (÷ = {quiet / f['decode_tok_s_bf16']:.2f}); "
                 f"weights {f['weights_bytes_bf16'] / 2**20:.1f} MiB "
                 f"(÷ = {f['weights_bytes'] / f['weights_bytes_bf16']:.2f})"),
        ]
        if one8:
            rows.append(("", f"{BUSY} sessions {f['aggregate8_tok_s_bf16']:.1f} tok/s aggregate "
                             f"(÷ = {one8 / f['aggregate8_tok_s_bf16']:.2f})"))
    return rows


def print_table(f: dict) -> None:
    rows = [
        ("model", f"{f['model']} on {f['backend']}/{f['device']} ({f['dtype']})"),
        ("dtype", f["dtype_reason"] + (f"; {f['quantized']}" if f["quantized"] else "")),
        ("load", f"{f['load_s']:.2f} s"),
        (f"prefill, {f['prefill_tokens']} tokens", f"{f['prefill_tok_s']:.0f} tok/s"),
        ("decode, 1 session", f"{f['decode_tok_s']:.1f} tok/s"),
    ]
    rows += comparison_rows(f)
    rows += [
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
