"""The engine's words are the app's: the Porter stemmer gives the terms SQLite FTS5's `porter`
tokenizer gives (the library's word index), over every word of Python's language reference."""

from __future__ import annotations

import re
import sqlite3

import pytest

from engine.retrieval.porter import stem


@pytest.mark.parametrize("word, want", [
    ("caresses", "caress"), ("ponies", "poni"), ("cats", "cat"), ("feed", "feed"), ("agreed", "agre"),
    ("plastered", "plaster"), ("motoring", "motor"), ("sing", "sing"), ("hopping", "hop"), ("filing", "file"),
    ("happy", "happi"), ("relational", "relat"), ("generalizations", "gener"), ("dictionaries", "dictionari"),
    ("dictionary", "dictionari"), ("iterating", "iter"), ("iterator", "iter"), ("controlling", "control"),
    ("is", "is"), ("x86", "x86"), ("café", "café"),
])
def test_porter_stems(word, want):
    assert stem(word) == want


def fts5_terms(words: list[str]) -> list[str]:
    """Each word's term in an FTS5 table with tokenize='porter', as the app's library table is made."""
    db = sqlite3.connect(":memory:")
    db.execute("create virtual table t using fts5(x, tokenize='porter')")
    db.executemany("insert into t(rowid, x) values (?, ?)", list(enumerate(words)))
    db.execute("create virtual table v using fts5vocab(t, 'instance')")
    return [term for term, in db.execute("select term from v order by doc")]


def test_same_terms_as_sqlite_fts5_porter():
    import argparse, logging, subprocess, typing  # noqa: E401 - their sources: English and code
    from pathlib import Path

    from pydoc_data.topics import topics

    texts = [*topics.values(), *(Path(m.__file__).read_text() for m in (argparse, logging, subprocess, typing))]
    words = sorted({w for text in texts for w in re.findall(r"[a-z0-9]+", text.lower())})
    assert len(words) > 4500
    want = fts5_terms(words)
    assert len(want) == len(words)
    wrong = [(w, stem(w), t) for w, t in zip(words, want) if stem(w) != t]
    assert not wrong, wrong[:20]
