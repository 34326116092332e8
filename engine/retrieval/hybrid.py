"""Hybrid ranking: vectors for meaning, BM25 for exact words, fused by reciprocal rank.

Reciprocal rank fusion (Cormack et al., 2009) adds 1 / (k + rank) over the rankings a passage is in:
it needs no score calibration between cosine similarities and BM25 scores, and a passage that is
near the top of either list rises. Pure functions over numpy arrays: the app keeps the vectors and the
word index in its store and passes what it has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

RRF_K = 60
"""The constant of the original paper; larger flattens the difference between ranks."""
POOL = 50
"""How deep each ranking is read before fusing."""


@dataclass(frozen=True)
class Hit:
    """One passage found, with why: its rank in each list (None where it was not in the top POOL)."""

    index: int
    score: float
    vector_rank: Optional[int] = None
    word_rank: Optional[int] = None


def by_vector(query: np.ndarray, vectors: np.ndarray, top: int = POOL) -> list[int]:
    """Indices of the `top` vectors nearest `query` (unit vectors: dot product = cosine)."""
    if len(vectors) == 0:
        return []
    sims = vectors @ query.astype(vectors.dtype)
    top = min(top, len(sims))
    best = np.argpartition(-sims, top - 1)[:top]
    return [int(i) for i in best[np.argsort(-sims[best], kind="stable")]]


def by_score(scores: np.ndarray, top: int = POOL) -> list[int]:
    """Indices of the `top` highest scores above zero (BM25: a passage with no query word is no match)."""
    order = np.argsort(-scores, kind="stable")[:top]
    return [int(i) for i in order if scores[i] > 0]


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K, weights: Optional[Sequence[float]] = None) -> list[tuple[int, float]]:
    """(index, fused score) best first, from rankings best first (reciprocal rank fusion)."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, index in enumerate(ranking):
            scores[index] = scores.get(index, 0.0) + weight / (k + rank + 1)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def hybrid(query_vector: np.ndarray, vectors: np.ndarray, word_scores: np.ndarray, top: int = 5,
           pool: int = POOL, k: int = RRF_K) -> list[Hit]:
    """The `top` passages by fused rank of the vector ranking and the word (BM25) ranking."""
    semantic, lexical = by_vector(query_vector, vectors, pool), by_score(word_scores, pool)
    where_v = {i: r for r, i in enumerate(semantic)}
    where_w = {i: r for r, i in enumerate(lexical)}
    return [Hit(i, s, where_v.get(i), where_w.get(i)) for i, s in fuse([semantic, lexical], k)[:top]]
