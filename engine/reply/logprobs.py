"""Log probabilities of sampled tokens, from the same distribution the sampler drew from.

Kept beside the sampler rather than inside it: the distribution is rebuilt with the sampler's own
functions (penalties, temperature, top-k/top-p/min-p filters) only when a caller asked for
log probabilities, so replies without them pay nothing.
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np

from .penalties import apply_penalties
from .sampling import filtered_probs
from ..types import SamplingParams, TokenLogprob


def token_logprob(logits: np.ndarray, history: Sequence[int], params: SamplingParams, token: int,
                  exempt: Collection[int] = ()) -> TokenLogprob:
    """Log probability of `token` and of the `params.logprobs` most likely tokens.

    `logits` are those the sampler saw (after the constraint's mask). At temperature 0 the choice is
    the argmax of the penalized logits; its distribution is their softmax (temperature 1).
    """
    x = np.asarray(apply_penalties(logits, history, params, exempt), dtype=np.float64)
    if params.temperature == 0:
        shifted = x - x.max()
        with np.errstate(divide="ignore"):
            logp = shifted - np.log(np.exp(shifted).sum())
    else:
        probs = filtered_probs(x / params.temperature, params)
        with np.errstate(divide="ignore"):
            logp = np.log(probs)
    top: tuple[tuple[int, float], ...] = ()
    n = min(params.logprobs or 0, len(logp))
    if n:
        best = np.argpartition(-logp, n - 1)[:n]
        best = best[np.argsort(-logp[best], kind="stable")]
        top = tuple((int(i), float(logp[i])) for i in best if np.isfinite(logp[i]))  # not masked-out tokens
    return TokenLogprob(int(token), float(logp[token]), top)
