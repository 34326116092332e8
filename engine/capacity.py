"""How much state one session needs, how much memory may hold it, and so how many sessions fit."""

from __future__ import annotations

from typing import Optional

from .errors import CapacityError, ModelLoadError

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
KV_CHUNK = 256
"""Tokens a full-attention K/V buffer grows by (torch backend); capacity rounds max_context up to it."""
# Share of memory still free after the weights that session state may use by default: the rest is
# left to the OS, the app and activations.
SAFE_SHARE = 0.5


def text_config(config: dict) -> dict:
    """Multimodal configs nest the language model's settings; sessions only care about those."""
    return config.get("text_config", config)


REQUIRED_KEYS = ("num_hidden_layers", "num_attention_heads", "hidden_size")
"""Config keys of the decoder families the engine serves (Llama, Qwen, Mistral, Gemma, ...)."""


def check_config(config: dict, name: str = "this model") -> None:
    """Refuse, by name, a config of a family the engine cannot size (e.g. GPT-2's n_layer/n_head)."""
    c = text_config(config)
    missing = [key for key in REQUIRED_KEYS if not isinstance(c.get(key), int) or isinstance(c.get(key), bool)]
    if missing:
        family = c.get("model_type") or config.get("model_type") or "unknown"
        raise ModelLoadError(
            f"{name}: unsupported model family {family!r}: its config has no {', '.join(missing)} "
            "(the engine serves Llama-style decoder configs)"
        )


def model_context_limit(config: dict) -> Optional[int]:
    """The model's own longest context (max_position_embeddings), when its config says."""
    limit = text_config(config).get("max_position_embeddings")
    return int(limit) if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def bytes_per_session(config: dict, dtype: str, max_context: int) -> int:
    """State bytes of one session filled to `max_context`.

    layers × kv heads × head dim × 2 (K and V) × dtype bytes × tokens, with sliding-window layers
    capped at their window, plus any fixed-size recurrent/conv state of hybrid models. Full-attention
    layers count max_context rounded up to KV_CHUNK: their buffers grow in whole chunks.
    """
    c = text_config(config)
    layers = int(c["num_hidden_layers"])
    heads = int(c["num_attention_heads"])
    kv_heads = int(c.get("num_key_value_heads") or heads)
    head_dim = int(c.get("head_dim") or c["hidden_size"] // heads)
    itemsize = DTYPE_BYTES[dtype]
    layer_types = c.get("layer_types") or ["full_attention"] * layers
    window = c.get("sliding_window")
    total = 0
    for kind in layer_types:
        if kind in ("full_attention", "attention"):
            tokens = -(-max_context // KV_CHUNK) * KV_CHUNK
        elif kind == "sliding_attention" and window:
            tokens = min(max_context, int(window))
        else:  # linear attention / recurrent layers: a fixed state, estimated from the config
            total += recurrent_state_bytes(c, itemsize)
            continue
        total += kv_heads * head_dim * 2 * itemsize * tokens
    return total


def recurrent_state_bytes(c: dict, itemsize: int) -> int:
    """Conv + recurrent state of one linear-attention layer (Qwen3-Next / Mamba-like configs)."""
    heads = int(c.get("linear_num_value_heads") or c.get("num_attention_heads", 1))
    k_dim = int(c.get("linear_key_head_dim") or c.get("head_dim") or 64)
    v_dim = int(c.get("linear_value_head_dim") or k_dim)
    conv = int(c.get("linear_conv_kernel_dim") or 4)
    hidden = int(c.get("hidden_size", heads * v_dim))
    return (heads * k_dim * v_dim + conv * 2 * hidden) * max(itemsize, 4)


def default_budget(available_after_load: int) -> int:
    """A safe share of the memory still free once the weights are resident."""
    return max(0, int(available_after_load * SAFE_SHARE))


def max_sessions(per_session: int, budget: int, configured: Optional[int], budget_given: bool = True) -> int:
    """Sessions that fit: what the budget holds, lowered to the configured cap when one is given.

    A configured cap alone (no memory_budget given) is trusted over the default budget's guess.
    Raises CapacityError when not even one session fits, so a useless engine is refused at load
    rather than failing every open.
    """
    if configured is not None and not budget_given:
        return configured
    fit = budget // max(per_session, 1)
    if fit < 1:
        raise CapacityError(
            f"the memory budget ({_size(budget)}) cannot hold one session "
            f"({_size(per_session)} at max_context); raise memory_budget or lower max_context"
        )
    return fit if configured is None else min(configured, fit)


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:.1f} KiB"


def admit(live: int, limit: int, per_session: int, budget: int) -> None:
    """Raise CapacityError, with the numbers, when one more session would not fit."""
    if live >= limit:
        raise CapacityError(
            f"cannot open another session: {live} of {limit} open "
            f"({per_session / 2**20:.1f} MiB per session at max_context, "
            f"budget {budget / 2**20:.0f} MiB); close or suspend a session first"
        )
