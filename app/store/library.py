"""A conversation's library: documents too large for the context, cut into passages with their
embedding vectors, and the passages each reply read (its sources). Reached as `store.library`.

Vectors are float32 BLOBs searched with numpy, not sqlite-vec: the extension needs Python's
`sqlite3` built with `enable_load_extension`, which some builds leave out (the one that runs
Confab's tests here among them: `hasattr(conn, "enable_load_extension")` is False), so it cannot be
counted on for every platform. Brute force costs little at a library's size: 50,000 passages of
384 dimensions are a 77 MB matrix, and one product with a query vector takes milliseconds. The
matrix of a conversation is kept in memory between turns, until its library changes.

Words are ranked by FTS5 (`bm25()`, porter stemming) beside the vectors; the engine fuses both
rankings (`engine.hybrid`). A reply's sources keep a copy of each passage's text: what the model
read stays readable after its document is removed or re-indexed (ARCHITECTURE.md, turn 5).

Functions of the store's thread, like the rest of the store; each write is one transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
from sqlite_utils import Database

from .errors import InvalidValueError, NotFoundError
from .records import check_choice

DOCUMENT_STATUSES: tuple[str, ...] = ("indexing", "ready", "failed", "cancelled", "interrupted")
"""indexing: being read and embedded (or waiting to be); ready: indexed; failed: `error` says why;
cancelled: the user stopped it; interrupted: the app quit while it was indexing. Every document with
passages is searched, whatever its status: one being re-indexed keeps its last index until the new
one replaces it whole."""
HEADING_JOIN = " › "
VECTOR_DTYPE = np.dtype("<f4")
"""How a vector's bytes are laid out: little-endian float32, on every platform."""
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_WORDS = 32
STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from how i if in into is it its of on or so such that the "
    "their then there these this to was what when where which while who why will with would you your".split())
"""Words left out of a word search (the engine's BM25 leaves out the same): in an OR query they match
nearly every passage, and ranking those cost 220 ms at 50,000 passages for nothing."""


@dataclass(frozen=True)
class LibraryDocument:
    """One file in a conversation's library."""

    id: int
    conversation_id: int
    name: str
    """Shown name: the file's name, or its path inside the folder that was added."""
    path: str
    """Where the file was when it was added (re-indexing reads it there again)."""
    media_type: str
    size: int
    modified: Optional[float]
    """The file's modification time when it was last indexed (None before)."""
    content_hash: Optional[str]
    """SHA-256 of the file's bytes when it was last indexed: an unchanged file is not embedded again."""
    status: str
    error: str
    """Why indexing failed, in words ("" otherwise)."""
    chunks: int
    embedder: Optional[str]
    """The embedding model its vectors came from; another model's vectors are not searched."""
    created_at: float
    updated_at: float

    @classmethod
    def from_row(cls, r: dict) -> "LibraryDocument":
        return cls(r["id"], r["conversation_id"], r["name"], r["path"], r["media_type"], r["size"], r["modified"],
                   r["content_hash"], r["status"], r["error"], r["chunks"], r["embedder"], r["created_at"],
                   r["updated_at"])


@dataclass(frozen=True)
class ChunkRow:
    """One passage to store: its text (heading path first), where it stands, its token count."""

    text: str
    page: Optional[int] = None
    last_page: Optional[int] = None
    headings: tuple[str, ...] = ()
    tokens: int = 0


@dataclass(frozen=True)
class Passage:
    """A stored passage, as retrieval hands it out."""

    id: int
    document_id: int
    name: str
    """Its document's name."""
    text: str
    page: Optional[int]
    last_page: Optional[int]
    heading: str
    tokens: int

    @property
    def location(self) -> str:
        return location(self.page, self.last_page, self.heading)


@dataclass(frozen=True)
class Source:
    """A passage a reply read: "manual.pdf p. 12, §Calibration", and the text the model was given."""

    name: str
    location: str
    text: str
    chunk_id: Optional[int] = None
    """The passage in the library (None once its document was removed or re-indexed)."""
    score: float = 0.0
    """Its fused rank score (reciprocal rank fusion; higher is better)."""
    id: Optional[int] = None

    @property
    def label(self) -> str:
        return f"{self.name} {self.location}".strip()

    @classmethod
    def of(cls, passage: Passage, score: float = 0.0) -> "Source":
        return cls(passage.name, passage.location, passage.text, passage.id, score)

    def as_dict(self) -> dict:
        """The export form (the passage's id in the library is not carried: an import has no library)."""
        return {"name": self.name, "location": self.location, "text": self.text}

    @classmethod
    def from_dict(cls, d: object) -> "Source":
        """From the export form; InvalidValueError naming the bad field."""
        if not isinstance(d, dict) or not all(isinstance(d.get(k), str) for k in ("name", "location", "text")):
            raise InvalidValueError("a source must be an object with text name, location and text")
        return cls(d["name"], d["location"], d["text"])


def location(page: Optional[int], last_page: Optional[int], heading: str) -> str:
    """"p. 12, §3.2 Calibration": the page (or pages) and the innermost heading, shortened."""
    parts = []
    if page:
        parts.append(f"p. {page}" if last_page in (None, page) else f"pp. {page}–{last_page}")
    title = heading.rsplit(HEADING_JOIN, 1)[-1].strip()
    if title:
        parts.append("§" + (title if len(title) <= 40 else title[:39] + "…"))
    return ", ".join(parts)


def vector_bytes(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=VECTOR_DTYPE).tobytes()


class Library:
    """The library tables. Every method runs on the store's thread."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock
        self._revision = 0  # bumped by every write: the cached matrices are then read again
        self._matrices: dict[tuple[int, str], tuple[int, np.ndarray, np.ndarray]] = {}

    # -- documents ---------------------------------------------------------------------------------
    def add(self, conversation_id: int, path: Path | str, name: str, media_type: str = "text/plain",
            size: int = 0) -> LibraryDocument:
        """The conversation's document for `path`: a new one (status `indexing`), or the one already
        there (a file added again is re-indexed, never listed twice)."""
        path = str(path)
        found = self._rows("conversation_id = ? and path = ?", [conversation_id, path])
        if found:
            return found[0]
        if self._db.execute("select 1 from conversations where id = ?", [conversation_id]).fetchone() is None:
            raise NotFoundError(f"No conversation {conversation_id}.")
        now = self._clock()
        with self._db.atomic():
            table = self._db["library_documents"].insert({
                "conversation_id": conversation_id, "name": name, "path": path, "media_type": media_type,
                "size": int(size), "status": "indexing", "error": "", "chunks": 0, "created_at": now,
                "updated_at": now})
        self._revision += 1
        return self.get(table.last_pk)

    def get(self, document_id: int) -> LibraryDocument:
        rows = self._rows("id = ?", [document_id])
        if not rows:
            raise NotFoundError(f"No library document {document_id}.")
        return rows[0]

    def exists(self, document_id: int) -> bool:
        return self._db.execute("select 1 from library_documents where id = ?", [document_id]).fetchone() is not None

    def documents(self, conversation_id: int) -> list[LibraryDocument]:
        """The conversation's documents, in the order they were added."""
        return self._rows("conversation_id = ?", [conversation_id])

    def set_status(self, document_id: int, status: str, error: str = "") -> LibraryDocument:
        """Mark a document (its chunks stay as they were: a failed re-index keeps the last index)."""
        check_choice("status", status, DOCUMENT_STATUSES)
        with self._db.atomic():
            self._db["library_documents"].update(document_id, {"status": status, "error": error,
                                                               "updated_at": self._clock()})
        self._revision += 1
        return self.get(document_id)

    def fill(self, document_id: int, chunks: Sequence[ChunkRow], vectors: np.ndarray, *, content_hash: str,
             embedder: str, media_type: str, size: int, modified: float) -> LibraryDocument:
        """Replace a document's passages with `chunks` and their `vectors` (one row each), in one
        transaction, and mark it `ready`: a crash leaves the old index or the new, never half."""
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or len(vectors) != len(chunks):
            raise InvalidValueError(f"{len(chunks)} chunks need as many vectors, not an array of shape {vectors.shape}")
        rows = [{"document_id": document_id, "ordinal": i, "text": c.text, "page": c.page,
                 "last_page": c.last_page, "heading": HEADING_JOIN.join(c.headings), "tokens": int(c.tokens),
                 "vector": vector_bytes(v)} for i, (c, v) in enumerate(zip(chunks, vectors))]
        with self._db.atomic():
            self.get(document_id)  # NotFoundError: removed while it was being indexed
            self._db["library_chunks"].delete_where("document_id = ?", [document_id])
            self._db["library_chunks"].insert_all(rows, batch_size=500)
            self._db["library_documents"].update(document_id, {
                "status": "ready", "error": "", "chunks": len(rows), "content_hash": content_hash,
                "embedder": embedder, "media_type": media_type, "size": int(size), "modified": modified,
                "updated_at": self._clock()})
        self._revision += 1
        return self.get(document_id)

    def remove(self, document_ids: Iterable[int]) -> int:
        """Remove documents and their passages (replies keep their copies of what they read)."""
        ids = list(document_ids)
        with self._db.atomic():
            for document_id in ids:  # chunks go by ON DELETE CASCADE; FTS rows by its triggers
                self._db["library_documents"].delete_where("id = ?", [document_id])
        self._revision += 1
        return len(ids)

    def recover_interrupted(self) -> int:
        """Documents left `indexing` by the last run (it quit or crashed) become `interrupted`;
        their previous passages, if any, are still there. Run once at start."""
        with self._db.atomic():
            cursor = self._db.execute("update library_documents set status = 'interrupted' where status = 'indexing'")
        return cursor.rowcount

    def add_all(self, conversation_id: int, files: Sequence[tuple[Path | str, str]]) -> list[LibraryDocument]:
        """`add` for each (path, name), in one transaction (a folder of thousands of files)."""
        with self._db.atomic():
            return [self.add(conversation_id, path, name) for path, name in files]

    # -- search ------------------------------------------------------------------------------------
    def searchable(self, conversation_id: int) -> bool:
        """The conversation has at least one document with passages."""
        return self._db.execute("select 1 from library_documents where conversation_id = ? and chunks > 0 "
                                "limit 1", [conversation_id]).fetchone() is not None

    def matrix(self, conversation_id: int, embedder: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, vectors) of the conversation's passages embedded by `embedder`: one
        row per passage, float32. Kept in memory until the library changes."""
        key = (conversation_id, embedder)
        cached = self._matrices.get(key)
        if cached is not None and cached[0] == self._revision:
            return cached[1], cached[2]
        rows = self._db.execute(
            """select c.id, c.vector from library_chunks c join library_documents d on d.id = c.document_id
               where d.conversation_id = ? and d.embedder = ? order by c.id""",
            [conversation_id, embedder]).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        if rows:
            vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=VECTOR_DTYPE).reshape(len(rows), -1)
        else:
            vectors = np.zeros((0, 0), dtype=VECTOR_DTYPE)
        self._matrices = {k: v for k, v in self._matrices.items() if k[0] != conversation_id}
        self._matrices[key] = (self._revision, ids, vectors)
        return ids, vectors

    def word_ranking(self, conversation_id: int, query: str, limit: int = 50) -> list[tuple[int, float]]:
        """(chunk id, BM25 score; higher is better) of passages holding any word of `query`, best
        first. Any text is accepted: words are quoted, so FTS5's syntax means nothing in them."""
        words = list(dict.fromkeys(w for w in _WORD.findall(query.lower())
                                   if len(w) > 1 and w not in STOPWORDS))[:MAX_QUERY_WORDS]
        if not words:
            return []
        match = " OR ".join('"{}"'.format(w.replace('"', '""')) for w in words)
        rows = self._db.execute(
            """select c.id, bm25(library_chunks_fts) as score from library_chunks_fts
               join library_chunks c on c.id = library_chunks_fts.rowid
               join library_documents d on d.id = c.document_id
               where library_chunks_fts match ? and d.conversation_id = ?
               order by score limit ?""", [match, conversation_id, limit]).fetchall()
        return [(r[0], -r[1]) for r in rows]  # FTS5's bm25() is negative: lower is better

    def passages(self, chunk_ids: Sequence[int]) -> list[Passage]:
        """The passages with these ids, in the order given (ids no longer stored are left out)."""
        found: dict[int, Passage] = {}
        ids = [int(i) for i in chunk_ids]
        for start in range(0, len(ids), 500):  # SQLite's variable limit
            part = ids[start:start + 500]
            for r in self._db.execute(
                    f"""select c.id, c.document_id, d.name, c.text, c.page, c.last_page, c.heading, c.tokens
                        from library_chunks c join library_documents d on d.id = c.document_id
                        where c.id in ({', '.join('?' * len(part))})""", part):
                found[r[0]] = Passage(*r)
        return [found[i] for i in ids if i in found]

    # -- a reply's sources -------------------------------------------------------------------------
    def add_sources(self, message_id: int, sources: Sequence[Source]) -> None:
        """Record the passages reply `message_id` read, in the order it read them (replacing any)."""
        with self._db.atomic():
            self._db["message_sources"].delete_where("message_id = ?", [message_id])
            self._db["message_sources"].insert_all(
                [{"message_id": message_id, "position": i, "chunk_id": s.chunk_id, "name": s.name,
                  "location": s.location, "text": s.text, "score": s.score} for i, s in enumerate(sources)])

    def sources_for(self, message_ids: list[int]) -> dict[int, tuple[Source, ...]]:
        """Each message's sources, in order; messages with none are absent."""
        found: dict[int, list[Source]] = {}
        for start in range(0, len(message_ids), 500):
            part = message_ids[start:start + 500]
            for r in self._db.execute(
                    f"""select message_id, name, location, text, chunk_id, score, id from message_sources
                        where message_id in ({', '.join('?' * len(part))}) order by message_id, position""", part):
                found.setdefault(r[0], []).append(Source(r[1], r[2], r[3], r[4], r[5] or 0.0, r[6]))
        return {k: tuple(v) for k, v in found.items()}

    def _rows(self, where: str, args: list) -> list[LibraryDocument]:
        return [LibraryDocument.from_row(r)
                for r in self._db["library_documents"].rows_where(where, args, order_by="id")]
