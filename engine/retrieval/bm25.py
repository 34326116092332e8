"""BM25 (Okapi) over chunks, for exact words a vector search misses: names, identifiers, numbers.

Written here rather than taken from a package: it is thirty lines over numpy, the app's store
ranks with SQLite FTS5's bm25() instead (the same formula), and this copy serves the engine-side
check and callers without a database. Parameters are the usual k1 = 1.2, b = 0.75.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

import numpy as np

_WORD = re.compile(r"[^\W_]+(?:_+[^\W_]+)*|_+[^\W_]+_*", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from how i if in into is it its of on or so such that the "
    "their then there these this to was what when where which while who why will with would you your".split())


def words(text: str) -> list[str]:
    """Lower-cased words and identifiers (`__enter__`, `sys.exc_info` as `sys`, `exc_info`), no stop words,
    a plural's final s dropped so "dictionaries" meets "dictionary" halfway ("dictionarie")."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w in STOPWORDS:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


class BM25:
    """An index of documents (chunks) that scores a query against each."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._terms = [Counter(words(d)) for d in documents]
        self._lengths = np.array([sum(t.values()) for t in self._terms], dtype=np.float64)
        self._average = float(self._lengths.mean()) if len(documents) else 0.0
        df = Counter(term for t in self._terms for term in t)
        n = len(documents)
        self._idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def __len__(self) -> int:
        return len(self._terms)

    def scores(self, query: str) -> np.ndarray:
        """One score per document; 0 where no query word occurs."""
        out = np.zeros(len(self._terms))
        norm = self.k1 * (1 - self.b + self.b * self._lengths / max(self._average, 1e-9))
        for term in set(words(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            tf = np.array([t.get(term, 0) for t in self._terms], dtype=np.float64)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out
