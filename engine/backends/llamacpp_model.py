"""What a loaded llama.cpp model says of itself: its description, K/V bytes per token, and whether
its memory is attention cells alone. Read on the engine thread, right after the model loads."""

from __future__ import annotations

import ctypes
import math
from typing import Optional

import llama_cpp as lc


def describe(model) -> str:
    """llama.cpp's one-line description, e.g. "llama 135M Q4_1"."""
    buf = ctypes.create_string_buffer(256)
    lc.llama_model_desc(model, buf, len(buf))
    return buf.value.decode(errors="replace")


def meta_int(model, key: str) -> Optional[int]:
    """A GGUF metadata value as an int; None when absent or not a number."""
    buf = ctypes.create_string_buffer(64)
    if lc.llama_model_meta_val_str(model, key.encode(), buf, len(buf)) < 0:
        return None
    try:
        return int(buf.value)
    except ValueError:
        return None


def bytes_per_token(model, k_bytes: float = 2, v_bytes: float = 2) -> int:
    """K and V bytes one token takes in every layer, at `k_bytes` and `v_bytes` per element (float16:
    2; a quantized cache type less, engine/kv_cache_type.py)."""
    arch = ctypes.create_string_buffer(64)
    lc.llama_model_meta_val_str(model, b"general.architecture", arch, len(arch))
    prefix = arch.value.decode()
    heads = int(lc.llama_model_n_head(model))
    kv_heads = int(lc.llama_model_n_head_kv(model)) or heads
    default = int(lc.llama_model_n_embd(model)) // max(heads, 1)
    k = meta_int(model, f"{prefix}.attention.key_length") or default
    v = meta_int(model, f"{prefix}.attention.value_length") or default
    return math.ceil(int(lc.llama_model_n_layer(model)) * kv_heads * (k * k_bytes + v * v_bytes))


def attention_only(model) -> bool:
    """Whether the model's memory is attention cells alone: not recurrent, no convolution or SSM
    state beside attention (a hybrid's GGUF keys say `ssm` or `shortconv`), no sliding window."""
    if lc.llama_model_n_swa(model) or lc.llama_model_is_recurrent(model):
        return False
    key = ctypes.create_string_buffer(256)
    for i in range(lc.llama_model_meta_count(model)):
        lc.llama_model_meta_key_by_index(model, i, key, len(key))
        if b".ssm." in key.value or b".shortconv." in key.value:
            return False
    return True


PARK_READ_BYTES_S = 1.5e9
"""Bytes of K/V a park or a restore moves per second (2-core EPYC: a 1.7B model's 1,571 tokens, 295 MB,
read out of llama.cpp in 0.2 s)."""
SKIP_S = 1e-10
"""What a masked cell costs llama.cpp's CPU flash attention per row, head and layer with Confab's patch
(packaging/llama_source.py), rounded up: the same EPYC, 8 sessions of 300 tokens, 6,400 idle cells
beside them (13.8 M cell visits a step) added 0 to 0.9 ms to a 50-57 ms step, in one process, steps
alternated. llama.cpp as published: 12-14 ms, about 1 ns a visit (earlier figure, 1.7B shape: 3 ns)."""


def park_break_even(model, per_token: int) -> int:
    """Row-steps (one row of one decode step) of the running turns after which parking an idle
    session costs less than their walking past its cells: a park and its restore move `per_token`
    bytes a cell twice; a row-step skips each cell once per head and layer. About 1,140 on the
    bundled model and 3,400 on a 1.7B's shape: with masked cells this cheap, a park for span alone
    pays only beside long replies."""
    heads_layers = int(lc.llama_model_n_head(model)) * int(lc.llama_model_n_layer(model))
    return math.ceil(2 * per_token / PARK_READ_BYTES_S / (SKIP_S * max(heads_layers, 1)))
