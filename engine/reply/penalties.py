"""Penalties on the tokens a session already holds: repeat (llama.cpp's, after CTRL), presence and
frequency (OpenAI's), applied to one row of float32 logits before temperature and the filters.

Hand-written in numpy beside the sampler rather than taken from transformers' processors, mlx-lm's
`make_logits_processors` or llama.cpp's penalties sampler: the three differ in window (transformers
looks at every token, llama.cpp at the last 64) and order, and one implementation makes the same
params give the same text on torch, MLX and llama.cpp.

The window is llama.cpp's: the last `repeat_last_n` tokens of the session, prompt and reply alike,
so a loop that began in an earlier turn is penalized too. End tokens are never penalized: each
earlier turn ends with one, and a penalized end token makes replies run on to their limit.
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np

from ..types import SamplingParams


def penalized(params: SamplingParams) -> bool:
    """Whether any penalty would change a logit."""
    on = params.repetition_penalty != 1.0 or params.presence_penalty or params.frequency_penalty
    return bool(on) and params.repeat_last_n != 0


def window(history: Sequence[int], last_n: int) -> Sequence[int]:
    """The tokens the penalties look at: the last `last_n` (-1: all, 0: none)."""
    if last_n < 0:
        return history
    return history[-last_n:] if last_n else ()


def apply_penalties(logits: np.ndarray, history: Sequence[int], params: SamplingParams,
                    exempt: Collection[int] = ()) -> np.ndarray:
    """`logits` with every penalty of `params` applied for the tokens in `history`'s window; tokens
    in `exempt` (the end tokens) keep their logits. Returns `logits` itself when nothing applies."""
    if not penalized(params):
        return logits
    recent = np.asarray(window(history, params.repeat_last_n), dtype=np.int64)
    if not len(recent):
        return logits
    seen, counts = np.unique(recent, return_counts=True)
    keep = (seen >= 0) & (seen < len(logits))
    if exempt:
        keep &= ~np.isin(seen, np.fromiter(exempt, dtype=np.int64))
    seen, counts = seen[keep], counts[keep]
    out = np.array(logits, copy=True)
    values = out[seen]
    penalty = params.repetition_penalty
    if penalty != 1.0:
        values = np.where(values > 0, values / penalty, values * penalty)
    values = values - counts * params.frequency_penalty - params.presence_penalty
    out[seen] = values
    return out
