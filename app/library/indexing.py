"""One document into a library's passages and vectors: read it (reading.py), cut it by structure
(`engine.chunk_text` / `chunk_pages`: headings, paragraphs, code blocks and tables kept whole,
neighbours overlapping), and embed the passages in batches. No widgets and no store: it runs on the
indexing thread and hands back what the store's thread writes in one transaction.

    indexed = index_document(path, embedder, cancelled=event.is_set, progress=say)   # indexing thread
    stored(store, document.id, indexed, embedder.source)                              # store thread

A cancel is seen between blocks read, between stretches of text cut, and between batches embedded,
so a large file stops within about a second of embedding (one batch), never at its end.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from app.store import ChunkRow, LibraryDocument, Store
from engine import Embedder, chunk_pages, chunk_text

from .reading import DocumentText, ReadCancelled, UnreadableFileError, content_hash, read_document

CHUNK_TOKENS = 256
"""Passage size in the embedding model's tokens, at most its window: `bench --retrieval` measured
recall rising with size up to the bundled model's window of 256 (engine/bench/retrieval.py)."""
OVERLAP = 32
EMBED_BATCH = 32
"""Passages per embedding call: a cancel and a progress report between calls (about 3 s on two busy
CPU cores with the bundled model, far less on a GPU)."""
SEGMENT_CHARS = 200_000
"""A long text is cut into passages a stretch at a time (progress and cancel between stretches);
stretches end before a heading, else at a blank line."""
READ_SHARE, CUT_SHARE = 0.1, 0.2
"""Shares of a document's progress bar for reading and for cutting; embedding has the rest."""

Progress = Callable[[str, float], None]
"""(what is being done: "reading", "cutting", "embedding"; fraction of this document done)."""


@dataclass(frozen=True)
class Indexed:
    """A document ready to store."""

    document: DocumentText
    content_hash: str
    chunks: list[ChunkRow]
    vectors: np.ndarray
    """One float32 row per chunk."""


def index_document(path: Path, embedder: Embedder, *, cancelled: Callable[[], bool] = lambda: False,
                   progress: Progress = lambda _what, _f: None, known_hash: Optional[str] = None) -> Optional[Indexed]:
    """`path` read, cut and embedded; None when its bytes still hash to `known_hash` (unchanged since
    it was indexed: nothing to do). UnreadableFileError says why it cannot be indexed, in words;
    ReadCancelled when `cancelled()` turned true."""
    digest = content_hash(path, cancelled)
    if digest == known_hash:
        return None
    document = read_document(path, cancelled=cancelled, progress=lambda f: progress("reading", READ_SHARE * f))
    chunks = passages(document, embedder, cancelled, lambda f: progress("cutting", READ_SHARE + CUT_SHARE * f))
    if not chunks:
        raise UnreadableFileError(f"{document.name} has no text to index.")
    start = READ_SHARE + CUT_SHARE
    vectors = embed([c.text for c in chunks], embedder, cancelled,
                    lambda f: progress("embedding", start + (1 - start) * f), [c.tokens for c in chunks])
    return Indexed(document, digest, chunks, vectors)


def passages(document: DocumentText, embedder: Embedder, cancelled: Callable[[], bool] = lambda: False,
             progress: Callable[[float], None] = lambda _f: None) -> list[ChunkRow]:
    """The document cut into passages the embedding model reads whole (its tokens counted by its
    own tokenizer); a PDF's passages keep their pages."""
    size = min(CHUNK_TOKENS, embedder.window)

    def count(text: str) -> int:
        if cancelled():  # the chunker counts often: a cancel is seen inside a long stretch too
            raise ReadCancelled()
        return embedder.count_tokens([text])[0]

    if document.pages:
        cut = chunk_pages(document.pages, size, OVERLAP, count)
    else:
        cut, done = [], 0
        for stretch in segments(document.text):
            cut += chunk_text(stretch, size, OVERLAP, count)
            done += len(stretch)
            progress(done / max(1, len(document.text)))
    progress(1.0)
    return [ChunkRow(c.text, c.page, c.last_page, c.headings, c.tokens) for c in cut]


def segments(text: str, size: int = SEGMENT_CHARS) -> Iterator[str]:
    """`text` in stretches of about `size` characters, each ending before a heading ("\\n#") or,
    failing that, at a blank line or a line end in its second half."""
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = -1
        for mark in ("\n#", "\n\n", "\n"):
            cut = text.rfind(mark, start + size // 2, end)
            if cut >= 0:
                break
        cut = cut + 1 if cut >= 0 else end
        yield text[start:cut]
        start = cut
    if start < len(text):
        yield text[start:]


def embed(texts: list[str], embedder: Embedder, cancelled: Callable[[], bool] = lambda: False,
          progress: Callable[[float], None] = lambda _f: None, lengths: Optional[Sequence[int]] = None) -> np.ndarray:
    """The texts' vectors (in their order), EMBED_BATCH at a time, longest first; a passage past the
    model's window is cut to it. Why longest first: a call's passages are padded to its longest, and
    a document's passages taken in their own order were padded by 29–37 %, in order of length by
    8–11 %. lengths: the texts' token counts (their characters when not given)."""
    size = lengths if lengths is not None else [len(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: -size[i])
    vectors = np.zeros((len(texts), embedder.dimensions), dtype=np.float32)
    for start in range(0, len(texts), EMBED_BATCH):
        if cancelled():
            raise ReadCancelled()
        part = order[start:start + EMBED_BATCH]
        vectors[part] = embedder.embed([texts[i] for i in part], truncate=True).vectors
        progress(min(1.0, (start + EMBED_BATCH) / len(texts)))
    return vectors


def stored(store: Store, document_id: int, indexed: Indexed, embedder: str) -> LibraryDocument:
    """Write `indexed` as document `document_id`'s passages (one transaction; on the store's thread)."""
    d = indexed.document
    return store.library.fill(document_id, indexed.chunks, indexed.vectors, content_hash=indexed.content_hash,
                              embedder=embedder, media_type=d.media_type, size=d.size, modified=d.modified)
