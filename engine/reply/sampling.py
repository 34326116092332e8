"""Pick the next token from float32 logits.

Written once in numpy rather than with transformers' logits processors (torch) and mlx-lm's samplers
(mlx): the two libraries order and define the filters differently, and one implementation makes the
same seed give the same text on both backends. The logits are one row per step, so numpy is cheap.
"""

from __future__ import annotations

from typing import Callable, Collection, Sequence

import numpy as np

from ..types import SamplingParams
from .penalties import apply_penalties

Sampler = Callable[[np.ndarray, Sequence[int]], int]


def make_sampler(params: SamplingParams, exempt: Collection[int] = ()) -> Sampler:
    """A callable (logits, the session's tokens so far) -> next token id, with its own seeded
    generator; `exempt`: tokens no penalty touches (the model's end tokens)."""
    rng = np.random.default_rng(params.seed)

    def sample(logits: np.ndarray, history: Sequence[int]) -> int:
        logits = apply_penalties(logits, history, params, exempt)
        if params.temperature == 0:
            return int(np.argmax(logits))
        # float64 before dividing: a small temperature must not overflow float32 into inf/NaN
        probs = filtered_probs(np.asarray(logits, dtype=np.float64) / params.temperature, params)
        return int(rng.choice(len(probs), p=probs))

    return sample


def filtered_probs(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """Softmax, then top-k, top-p and min-p filters; renormalized."""
    logits = logits.astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    if params.top_k and params.top_k < len(probs):
        kth = np.partition(probs, -params.top_k)[-params.top_k]
        probs = np.where(probs >= kth, probs, 0.0)
    if params.top_p < 1.0:
        order = np.argsort(-probs, kind="stable")
        cumulative = np.cumsum(probs[order])
        # keep every token up to and including the one that crosses top_p
        cut = int(np.searchsorted(cumulative, params.top_p * cumulative[-1])) + 1
        keep = np.zeros_like(probs, dtype=bool)
        keep[order[:cut]] = True
        probs = np.where(keep, probs, 0.0)
    if params.min_p > 0:
        probs = np.where(probs >= params.min_p * probs.max(), probs, 0.0)
    return probs / probs.sum()


def steps_alone(params: SamplingParams) -> bool:
    """Whether a reply must step in its own forward: a seeded, sampled one does. A batched forward's
    logits differ slightly from a solo one's (torch: float32 left-padded rows, up to ~0.2 in a logit
    on the bundled model; llama.cpp: other kernels for a many-token batch), enough to tip a sampled
    token, and a seed promises the same text either way."""
    return params.seed is not None and params.temperature > 0
