"""Decode cost against context length: ms per token with ~64 and ~4,000 tokens already in the session.

A cache that copies its whole history every token (torch.cat) makes the second figure grow with the
context; a preallocated one keeps it close to the first (the target is ctx4k <= 1.6 x ctx64).
"""

from __future__ import annotations

from ..engine import Engine
from ..types import SamplingParams

TEXT = "The quick brown fox jumps over the lazy dog while the band plays on. "


def decode_ms_at_context(engine: Engine, context: int, tokens: int = 32) -> float:
    """Mean decode ms/token of `tokens` greedy tokens after a `context`-token prompt (prefill not counted)."""
    ids = engine.tokenizer(TEXT * (context // 8 + 1), add_special_tokens=False).input_ids[:context]
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_stop=True)
    with engine.open_session() as s:
        last = list(s.generate(ids, params))[-1]
    rate = last.stats.decode_tok_s
    return 1000.0 / rate if rate else float("nan")


def context_figures(engine: Engine, say, long_context: int = 4000) -> dict[str, float]:
    """Both figures from one engine in one run (only figures taken close together compare)."""
    room = engine.config.max_context - 40
    contexts = {"decode_ms_ctx64": 64, "decode_ms_ctx4k": long_context}
    figures = {}
    for key, context in contexts.items():
        figures[key] = round(decode_ms_at_context(engine, min(context, room)), 2)
    figures["decode_ctx4k_vs_ctx64"] = round(figures["decode_ms_ctx4k"] / figures["decode_ms_ctx64"], 2)
    say(f"decode at ~64 tokens of context: {figures['decode_ms_ctx64']:.1f} ms/token; at ~4k: "
        f"{figures['decode_ms_ctx4k']:.1f} ms/token ({figures['decode_ctx4k_vs_ctx64']}x)")
    return figures


def context_rows(f: dict) -> list[tuple[str, str]]:
    return [
        ("decode at ~64 context", f"{f['decode_ms_ctx64']:.1f} ms/token"),
        ("decode at ~4k context", f"{f['decode_ms_ctx4k']:.1f} ms/token ({f['decode_ctx4k_vs_ctx64']}× ~64)"),
    ]
