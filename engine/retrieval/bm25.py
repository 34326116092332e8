"""BM25 (Okapi) over chunks, for exact words a vector search misses: names, identifiers, numbers.

Written here rather than taken from a package: it is thirty lines over numpy, the app's store
ranks with SQLite FTS5's bm25() instead (the same formula), and this copy serves the engine-side
check and callers without a database. Parameters are the usual k1 = 1.2, b = 0.75.

Words are read as the app's FTS5 table (`tokenize='porter'`) reads them, so that `bench --retrieval`
measures the ranking a user gets: runs of letters and digits (an underscore or a dot separates, so
`sys.exc_info` is "sys", "exc", "info"), lower-cased, accents dropped, Porter-stemmed ("iterating"
and "iterators" are both "iter"); every word counts in a passage's length, and a query leaves out
stop words and single characters, as the app's query does.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from typing import Sequence

import numpy as np

from .porter import stem

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_QUERY_WORD = re.compile(r"\w+", re.UNICODE)
"""The app's query words (app/store/library.py): an identifier is one word until FTS5 reads it."""
STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from how i if in into is it its of on or so such that the "
    "their then there these this to was what when where which while who why will with would you your".split())


def terms(text: str) -> list[str]:
    """Every word of `text` as the index holds it: lower-cased, without accents, stemmed."""
    text = text.lower()
    if not text.isascii():  # FTS5's unicode61 drops diacritics: "café" is "cafe"
        text = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return [stem(w) for w in _WORD.findall(text)]


def words(text: str) -> list[str]:
    """A query's words as terms: stop words and single characters left out, each word once before it
    is stemmed, as the app asks FTS5 ("What does __enter__ do with the dictionaries?" is "enter",
    "dictionari")."""
    tokens = dict.fromkeys(t for t in _QUERY_WORD.findall(text.lower()) if len(t) > 1 and t not in STOPWORDS)
    return [term for token in tokens for term in terms(token)]


class BM25:
    """An index of documents (chunks) that scores a query against each."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._terms = [Counter(terms(d)) for d in documents]
        self._lengths = np.array([sum(t.values()) for t in self._terms], dtype=np.float64)
        self._average = float(self._lengths.mean()) if len(documents) else 0.0
        df = Counter(term for t in self._terms for term in t)
        n = len(documents)
        # FTS5's idf: a word in more than half the passages weighs (almost) nothing
        self._idf = {term: max(math.log((n - f + 0.5) / (f + 0.5)), 1e-6) for term, f in df.items()}

    def __len__(self) -> int:
        return len(self._terms)

    def scores(self, query: str) -> np.ndarray:
        """One score per document; 0 where no query word occurs."""
        out = np.zeros(len(self._terms))
        norm = self.k1 * (1 - self.b + self.b * self._lengths / max(self._average, 1e-9))
        for term in words(query):
            idf = self._idf.get(term)
            if idf is None:
                continue
            tf = np.array([t.get(term, 0) for t in self._terms], dtype=np.float64)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out
