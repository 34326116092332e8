"""BM25, vector ranking and their reciprocal-rank fusion: the order a caller gets, seeded and exact."""

from __future__ import annotations

import numpy as np
import pytest

from engine.retrieval import BM25, by_score, by_vector, fuse, hybrid, words

DOCS = [
    "The with statement calls __enter__ and __exit__ on a context manager.",
    "Dictionaries map hashable keys to values; a dictionary view reflects changes.",
    "A for loop iterates over the items of a sequence or another iterable.",
    "The for statement has an optional else clause run when the loop ends normally.",
    "Lists are mutable sequences; list.sort sorts them in place.",
]


def test_words_are_stemmed_and_split_as_fts5_reads_them():
    assert words("What does __enter__ do with the dictionaries?") == ["enter", "dictionari"]
    assert words("sys.exc_info()") == ["sy", "exc", "info"]  # "sys" is stemmed as FTS5 stems it
    assert words("Iterating iterators: a café's x") == ["iter", "iter", "cafe"]


def fts5_scores(docs: list[str], query: str) -> np.ndarray:
    """What the app's library search gets: FTS5 (tokenize='porter') bm25() of the app's own query."""
    import sqlite3

    from app.store.library import _WORD, STOPWORDS

    db = sqlite3.connect(":memory:")
    db.execute("create virtual table t using fts5(text, tokenize='porter')")
    db.executemany("insert into t(rowid, text) values (?, ?)", list(enumerate(docs)))
    query_words = dict.fromkeys(w for w in _WORD.findall(query.lower()) if len(w) > 1 and w not in STOPWORDS)
    match = " OR ".join(f'"{w}"' for w in query_words)
    out = np.zeros(len(docs))
    for rowid, score in db.execute("select rowid, bm25(t) from t where t match ?", [match]):
        out[rowid] = -score
    return out


@pytest.mark.parametrize("query", ["__exit__ context manager", "loop else", "dictionary views",
                                   "Which loops iterate over sequences?", "sorts lists in place"])
def test_bm25_scores_are_the_apps_fts5_scores(query):
    from app.store.library import STOPWORDS as APP_STOPWORDS
    from engine.retrieval.bm25 import STOPWORDS

    assert STOPWORDS == APP_STOPWORDS
    assert np.allclose(BM25(DOCS).scores(query), fts5_scores(DOCS, query), rtol=1e-9, atol=1e-12)


def test_bm25_ranks_the_document_with_the_rare_word_first():
    index = BM25(DOCS)
    scores = index.scores("__exit__ context manager")
    assert by_score(scores)[0] == 0
    assert scores[1] == 0  # no query word in it: never a match
    # "for" is a stop word, "loop" is in two documents, "else" in one: the rarer word decides
    assert by_score(index.scores("loop else"))[0] == 3
    assert by_score(index.scores("dictionary"))[0] == 1  # "dictionaries" and "dictionary" meet


def test_bm25_of_nothing():
    assert by_score(BM25(DOCS).scores("zebra")) == []
    assert len(BM25([])) == 0 and BM25([]).scores("x").shape == (0,)


def test_by_vector_orders_by_cosine():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[13] + 0.01 * rng.normal(size=8).astype(np.float32)
    order = by_vector(query, vectors, top=10)
    assert order[0] == 13 and len(order) == 10
    sims = vectors @ query
    assert list(order) == [int(i) for i in np.argsort(-sims)[:10]]
    assert len(by_vector(query, vectors, top=500)) == 50
    assert by_vector(query, vectors[:0]) == []


def test_fuse_is_reciprocal_rank_fusion():
    fused = fuse([[1, 2, 3], [3, 1, 9]], k=60)
    scores = dict(fused)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert scores[9] == pytest.approx(1 / 63)
    assert [i for i, _ in fused][:2] == [1, 3]  # in both lists near the top
    assert fuse([[5], [4]]) == [(4, 1 / 61), (5, 1 / 61)]  # ties: by index, so runs agree


def test_hybrid_finds_what_either_ranking_finds():
    # vectors favour doc 2, words favour doc 0: both come back, each saying where it was found
    vectors = np.eye(5, dtype=np.float32)
    query = np.array([0, 0, 1, 0, 0], dtype=np.float32)
    hits = hybrid(query, vectors, BM25(DOCS).scores("__enter__"), top=2)
    assert {h.index for h in hits} == {0, 2}
    by_index = {h.index: h for h in hits}
    assert by_index[2].vector_rank == 0 and by_index[2].word_rank is None
    assert by_index[0].word_rank == 0
