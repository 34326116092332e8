"""The retrieval check itself (`bench --retrieval`): every question is answerable from its corpus as
chunked, and recall counts a hit by the answer's phrase, wherever it sits."""

from __future__ import annotations

import re

from pydoc_data.topics import topics

from engine.bench import retrieval
from engine.bench.retrieval_questions import QUESTIONS
from engine.embeddings import Embedder


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_every_answer_lies_in_its_topic_and_in_one_chunk():
    tokenizer = Embedder().tokenizer  # located and its tokenizer read; no weights loaded
    chunks = retrieval.corpus(lambda text: tokenizer.count([text])[0])
    assert all(c.tokens <= tokenizer.window for c in chunks if "```" not in c.body)
    bodies = [norm(c.body) for c in chunks]
    for question, topic, phrase in QUESTIONS:
        assert norm(phrase) in norm(topics[topic]), question
        assert any(norm(phrase) in b for b in bodies), f"chunking splits the answer to: {question}"
    assert len(QUESTIONS) >= 60 and len({q for q, _, _ in QUESTIONS}) == len(QUESTIONS)


def test_recall_counts_the_phrase_in_the_first_k():
    chunks = retrieval.corpus(lambda text: len(text.split()))
    where = [next(i for i, c in enumerate(chunks) if norm(p) in norm(c.body)) for _, _, p in QUESTIONS]
    perfect = [[w] for w in where]
    assert retrieval.recall(perfect, chunks) == {"recall@1": 1.0, "recall@5": 1.0}
    late = [[0, 0, 0, w] for w in where]  # each answer fourth: within 5, not first (unless chunk 0 holds it)
    got = retrieval.recall(late, chunks)
    assert got["recall@5"] == 1.0 and got["recall@1"] < 0.1


def test_the_command_prints_the_figures_as_json(monkeypatch, capsys):
    import json

    from engine.__main__ import main

    whole = retrieval.corpus
    monkeypatch.setattr(retrieval, "corpus", lambda count, *a: whole(count, *a)[:12])  # a few topics: quick
    assert main(["bench", "--retrieval", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["chunks"] == 12 and figures["questions"] == len(QUESTIONS)
    assert figures["model"] == "bundled:all-minilm-l6-v2" and figures["backend"] == "torch"
    assert figures["chunks_per_s"] > 0 and figures["chunk_max_tokens"] == 256
    assert figures["dtype"].split(":")[0] in ("float32", "bfloat16")  # and why, in words
    for ranking in ("vector", "bm25", "hybrid"):
        assert set(figures[ranking]) == {"recall@1", "recall@5"}
        assert 0 <= figures[ranking]["recall@1"] <= figures[ranking]["recall@5"] <= 1
