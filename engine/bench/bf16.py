"""The same figures from a dense bfloat16 engine, beside the auto-dtype (and 4-bit) one in one run.

The issue's targets are ratios against dense bfloat16 (what `auto` loaded before it looked at the
hardware): prefill in auto dtype >= 3x, weights <= 0.35x, decode >= 1.25x and aggregate at 8
sessions >= 3x. Measured right after the auto figures, since only figures taken close together
compare on a shared machine.
"""

from __future__ import annotations

from .. import Engine, EngineConfig

SESSIONS = 8


def bf16_figures(model: str, backend: str, tokens: int, measure_prefill, measure_decode, measure_concurrent) -> dict:
    """prefill_tok_s_bf16, decode_tok_s_bf16, aggregate8_tok_s_bf16 and weights_bytes_bf16 (torch only)."""
    if backend != "torch":
        return {}
    config = EngineConfig(backend=backend, dtype="bfloat16", quantize="none")
    with Engine.load(model, config) as engine:
        return {
            "prefill_tok_s_bf16": round(measure_prefill(engine), 1),
            "decode_tok_s_bf16": round(measure_decode(engine, tokens), 2),
            "aggregate8_tok_s_bf16": round(measure_concurrent(engine, SESSIONS, tokens)[0], 2),
            "weights_bytes_bf16": engine.capacity().weights_bytes,
        }
