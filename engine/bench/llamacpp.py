"""`python -m engine bench --backend llamacpp`: the llama.cpp backend's figures, each against its
baseline taken in the same run.

- decode of one session vs llama-cpp-python's own `Llama` class on the same file, same threads,
  greedy (`decode_vs_library`, target >= 0.95);
- aggregate decode of 8 sessions vs 1 (`aggregate8_vs_1`, target >= 1.3) and the time to first token
  of a new request while 8 decode vs idle (`ttft_busy8_vs_idle`, target <= 2);
- memory: the K/V bytes 8 sessions of 500 tokens hold vs one of 4,000 (`kv_8x500_vs_4000`, target
  <= 1.2: one pool, not 8 × max_context), the same for their saved state files, `bytes_per_session`;
- save/restore of the 4,000-token session vs prefilling it again (`restore_vs_prefill`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..engine import Engine
from ..types import EngineConfig, SamplingParams

MEMORY_SESSIONS, MEMORY_TOKENS, LONG_TOKENS = 8, 500, 4000
TEXT = "The quick brown fox jumps over the lazy dog while the band plays on. "


def library_decode_tok_s(path: Path, threads: int, prompt: list[int], tokens: int, gpu_layers: int = 0) -> float:
    """One sequence through llama-cpp-python's `Llama.generate`, greedy, timed from its first token
    (as the engine's decode_tok_s is), with as many layers on the GPU as the engine has."""
    from llama_cpp import Llama

    # The engine's context settings that change the arithmetic: flash attention (see the backend).
    llm = Llama(model_path=str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads, flash_attn=True,
                n_gpu_layers=gpu_layers, verbose=False)
    try:
        for _ in zip(range(16), llm.generate(prompt, temp=0.0, top_k=1, reset=True)):  # warm-up
            pass
        first, n = 0.0, 0
        for n, _ in enumerate(llm.generate(prompt, temp=0.0, top_k=1, reset=True)):
            if n == 0:
                first = time.perf_counter()
            elif n >= tokens - 1:
                break
        return n / (time.perf_counter() - first)
    finally:
        llm.close()


def memory_figures(engine: Engine, say) -> dict:
    """K/V and saved-state bytes of 8 sessions × 500 tokens against one session of 4,000, and the
    4,000-token session's restore time against prefilling it again."""
    ids = engine.tokenizer(TEXT * (LONG_TOKENS // 8), add_special_tokens=False).input_ids
    one = SamplingParams(temperature=0, max_tokens=1)
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="confab-bench-") as tmp:
        sessions = [engine.open_session() for _ in range(MEMORY_SESSIONS)]
        for i, s in enumerate(sessions):
            list(s.generate(ids[i:i + MEMORY_TOKENS], one))  # holds the prompt; the reply token is not fed
        held8 = sum(s.state_nbytes for s in sessions)
        saved8 = 0
        for i, s in enumerate(sessions):
            s.save_state(Path(tmp) / f"s{i}.state")
            saved8 += (Path(tmp) / f"s{i}.state").stat().st_size
            s.close()
        with engine.open_session() as s:
            last = list(s.generate(ids[:LONG_TOKENS], one))[-1]
            prefill_s = last.stats.ttft_s
            held1 = s.state_nbytes
            path = Path(tmp) / "long.state"
            s.save_state(path)
        started = time.perf_counter()
        with engine.open_session(restore_from=path) as restored:
            restore_s = time.perf_counter() - started
            assert restored.state_nbytes == held1
        figures.update(
            kv_bytes_8x500=held8, kv_bytes_4000=held1, kv_8x500_vs_4000=round(held8 / held1, 3),
            state_file_bytes_8x500=saved8, state_file_bytes_4000=path.stat().st_size,
            state_files_8x500_vs_4000=round(saved8 / path.stat().st_size, 3),
            prefill_4000_s=round(prefill_s, 3), restore_4000_s=round(restore_s, 4),
            restore_vs_prefill=round(prefill_s / restore_s, 1),
        )
    say(f"K/V held: {MEMORY_SESSIONS} × {MEMORY_TOKENS} tokens {held8 / 2**20:.1f} MiB, one of {LONG_TOKENS} "
        f"{held1 / 2**20:.1f} MiB ({figures['kv_8x500_vs_4000']}×); state files {figures['state_files_8x500_vs_4000']}×")
    say(f"restore {LONG_TOKENS} tokens: {restore_s * 1000:.0f} ms vs prefill {prefill_s:.2f} s "
        f"({figures['restore_vs_prefill']}× faster)")
    return figures


def llamacpp_figures(model: str, counts: list[int], tokens: int, say, contended: bool,
                     prefill_tokens: int) -> dict:
    """Every figure for the llama.cpp backend, baselines included."""
    from .measure import BUSY, _prompt, measure_concurrent, measure_decode, measure_prefill, measure_ttft
    from .contended import decode_contended, decode_two_procs

    started = time.perf_counter()
    engine = Engine.load(model, EngineConfig(backend="llamacpp", max_context=max(4096, LONG_TOKENS + 96)))
    load_s = time.perf_counter() - started
    with engine:
        backend = engine._worker.backend  # the bench reads the thread count and file it measures with
        on = f" · {engine.placement}" if engine.placement else ""
        say(f"loaded {engine.model.name} on llamacpp/{engine.device}{on} in {load_s:.1f} s ({engine.backend_reason}); "
            f"{backend.threads} threads; {engine.quantized}")
        prefill = measure_prefill(engine, prefill_tokens)
        decode = measure_decode(engine, tokens)
        library = library_decode_tok_s(engine.model.path, backend.threads, _prompt(engine, 0), tokens,
                                       backend.placement.layers if backend.placement else 0)
        say(f"prefill {prefill:.0f} tok/s; decode, one session: {decode:.1f} tok/s; llama-cpp-python's Llama: "
            f"{library:.1f} tok/s ({decode / library:.3f}×)")
        aggregate, per_session = {}, {}
        for n in counts:
            aggregate[n], per_session[n] = measure_concurrent(engine, n, tokens)
            say(f"{n} sessions: {aggregate[n]:.1f} tok/s in aggregate, {per_session[n]:.1f} per session")
        ttft_idle, ttft_busy = measure_ttft(engine, busy=0), measure_ttft(engine, busy=BUSY)
        say(f"time to first token: {ttft_idle:.3f} s idle, {ttft_busy:.3f} s while {BUSY} sessions decode")
        extra = memory_figures(engine, say)
        if contended:
            extra["decode_tok_s_contended"] = round(decode_contended(engine, tokens, measure_decode), 2)
            extra["decode_tok_s_two_procs"] = round(decode_two_procs(model, "llamacpp", "auto", tokens), 2)
            say(f"decode beside a busy core: {extra['decode_tok_s_contended']:.1f} tok/s; two engine processes: "
                f"{extra['decode_tok_s_two_procs']:.1f} tok/s (slower)")
        cap = engine.capacity()
        one, eight = aggregate.get(1), aggregate.get(BUSY)
        return {
            "model": engine.model.name,
            "backend": engine.backend,
            "backend_reason": engine.backend_reason,
            "device": engine.device,
            "placement": engine.placement,
            "dtype": engine.dtype,
            "quantized": engine.quantized,
            "threads": backend.threads,
            "load_s": round(load_s, 2),
            "prefill_tok_s": round(prefill, 1),
            "prefill_tokens": prefill_tokens,
            "decode_tok_s": round(decode, 2),
            "library_decode_tok_s": round(library, 2),
            "decode_vs_library": round(decode / library, 3),
            "aggregate_tok_s": {str(n): round(v, 2) for n, v in aggregate.items()},
            "per_session_tok_s": {str(n): round(v, 2) for n, v in per_session.items()},
            "aggregate8_vs_1": round(eight / one, 2) if one and eight else None,
            "ttft_idle_s": round(ttft_idle, 4),
            "ttft_busy8_s": round(ttft_busy, 4),
            "ttft_busy8_vs_idle": round(ttft_busy / ttft_idle, 2),
            "weights_bytes": cap.weights_bytes,
            "bytes_per_session": cap.bytes_per_session,
            "bytes_per_token": backend.pool.bytes_per_token,
            "pool_tokens": cap.pool_tokens,
            "pool_bytes": cap.budget_bytes,
            "max_context": engine.config.max_context,
            **extra,
        }


def print_llamacpp_table(f: dict) -> None:
    one = f["aggregate_tok_s"].get("1")
    rows = [
        ("model", f"{f['model']} on llamacpp/{f['device']}, {f['threads']} threads ({f['quantized']})"),
        ("why", f["backend_reason"]),
        (f"prefill, {f['prefill_tokens']} tokens", f"{f['prefill_tok_s']:.0f} tok/s"),
        ("decode, 1 session", f"{f['decode_tok_s']:.1f} tok/s"),
        ("llama-cpp-python Llama", f"{f['library_decode_tok_s']:.1f} tok/s (engine ÷ library = {f['decode_vs_library']})"),
    ]
    if "decode_vs_torch" in f:
        rows.append(("torch auto, same run", f"{f['torch_decode_tok_s']:.1f} tok/s (llamacpp ÷ torch = {f['decode_vs_torch']})"))
    for n, v in f["aggregate_tok_s"].items():
        rows.append((f"{n} sessions", f"{v:.1f} tok/s aggregate ({v / one:.2f}× 1 session), "
                                      f"{f['per_session_tok_s'][n]:.1f} per session" if one else f"{v:.1f} tok/s"))
    rows += [
        ("first token, idle / 8 busy", f"{f['ttft_idle_s']:.3f} s / {f['ttft_busy8_s']:.3f} s ({f['ttft_busy8_vs_idle']}×)"),
        ("K/V 8 × 500 vs 1 × 4000", f"{f['kv_bytes_8x500'] / 2**20:.1f} / {f['kv_bytes_4000'] / 2**20:.1f} MiB "
                                    f"({f['kv_8x500_vs_4000']}×); state files {f['state_files_8x500_vs_4000']}×"),
        ("restore 4000 tokens", f"{f['restore_4000_s'] * 1000:.0f} ms vs prefill {f['prefill_4000_s']:.2f} s "
                                f"({f['restore_vs_prefill']}×)"),
        ("weights", f"{f['weights_bytes'] / 2**20:.1f} MiB"),
        ("per session", f"{f['bytes_per_session'] / 2**20:.1f} MiB at max_context {f['max_context']}; pool "
                        f"{f['pool_tokens']} tokens = {f['pool_bytes'] / 2**20:.0f} MiB"),
    ]
    if "decode_tok_s_contended" in f:
        rows.append(("decode beside busy core", f"{f['decode_tok_s_contended']:.1f} tok/s; two procs "
                                                f"{f['decode_tok_s_two_procs']:.1f}"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
