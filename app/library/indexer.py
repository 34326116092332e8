"""The indexing thread: files and folders added to a conversation's library are read, cut and
embedded there, one file at a time, never on the GUI thread; the store writes each finished file
on the store's thread (one transaction), so a quit loses at most the file being indexed.

    indexer = Indexer(bridge, shared_embedder)
    indexer.progress.connect(show)        # IndexProgress while it works, None once it is idle
    indexer.changed.connect(refresh)      # (conversation id): a document was added or changed
    indexer.add_paths(cid, [Path("manual.pdf"), Path("docs/")])
    indexer.cancel()                      # stops within a batch; finished files stay indexed

A file that cannot be indexed says why on its document (status `failed`); a re-index that fails or
is cancelled keeps the document's last index, searchable, with the reason beside it.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, TypeVar

from PySide6.QtCore import QObject, Signal

from app.bridge import Bridge, GuiRoute
from app.store import LibraryDocument, NotFoundError, Store
from engine import EngineError

from .embedder import SharedEmbedder
from .indexing import index_document, stored
from .reading import ReadCancelled, UnreadableFileError, folder_files

log = logging.getLogger(__name__)
T = TypeVar("T")
STAGES = {"reading": "reading", "cutting": "cutting into passages", "embedding": "embedding"}


@dataclass(frozen=True)
class IndexProgress:
    """Where the indexing thread is."""

    conversation_id: int
    name: str
    """The file being indexed."""
    number: int
    """Its place in this batch of files (1-based)."""
    total: int
    """Files in this batch."""
    stage: str
    fraction: float
    """Of this file."""

    @property
    def words(self) -> str:
        """"Indexing manual.pdf (3 of 12): embedding, 40 %"."""
        of = f" ({self.number} of {self.total})" if self.total > 1 else ""
        return f"Indexing {self.name}{of}: {STAGES.get(self.stage, self.stage)}, {self.fraction:.0%}"


class Indexer(QObject):
    """One indexing thread for every conversation; signals arrive on the GUI thread."""

    progress = Signal(object)
    """IndexProgress, or None once nothing is left to index."""
    changed = Signal(int)
    """(conversation id): its library's documents were added, removed or changed status."""
    failed = Signal(str)
    """Something added could not be taken at all (a folder with nothing to read), in words."""

    def __init__(self, bridge: Bridge, embedder: SharedEmbedder, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.embedder = embedder
        self.route = GuiRoute(self)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="confab-index")
        self._cancel = threading.Event()  # replaced by cancel(): jobs queued later are not cancelled
        self._jobs = 0  # GUI thread: batches queued or running
        self.current: Optional[int] = None
        """The document being indexed now (GUI thread's view; None when idle)."""

    @property
    def busy(self) -> bool:
        return self._jobs > 0

    def add_paths(self, conversation_id: int, paths: list[Path]) -> None:
        """Index files and the readable files of folders into the conversation's library (a file
        already there is re-indexed, not listed twice)."""
        self._queue(self._add, conversation_id, [Path(p) for p in paths])

    def reindex(self, conversation_id: int, document_ids: list[int]) -> None:
        """Read documents again; an unchanged file (same bytes) is not embedded again."""
        self._queue(self._reindex, conversation_id, list(document_ids))

    def warm(self) -> None:
        """Load the embedding model's weights on this thread (not the store's, where the first
        question would wait for them); a failure is said when a reply searches."""
        if self.embedder.memory() is None:
            try:
                self._worker.submit(self._warm)
            except RuntimeError:  # closed
                pass

    def _warm(self) -> None:
        try:
            self.embedder.get().load()
        except Exception:
            log.info("the embedding model did not load ahead of use", exc_info=True)

    def cancel(self) -> None:
        """Stop the file being indexed (within one batch) and every file waiting; those already
        indexed stay."""
        self._cancel.set()
        self._cancel = threading.Event()

    def close(self) -> None:
        """Cancel and wait for the thread (its last batch); before the bridge closes."""
        self.cancel()
        self.route.close()
        self._worker.shutdown(wait=True, cancel_futures=True)

    # -- GUI thread --------------------------------------------------------------------------------
    def _queue(self, job: Callable, conversation_id: int, items: list) -> None:
        self._jobs += 1
        try:
            self._worker.submit(self._run, job, conversation_id, items, self._cancel)
        except RuntimeError:  # closed: the app is quitting
            self._jobs -= 1

    def _job_done(self) -> None:
        self._jobs -= 1
        if not self._jobs:
            self.current = None
            self.progress.emit(None)

    def _show(self, progress: IndexProgress, document_id: int) -> None:
        self.current = document_id
        self.progress.emit(progress)

    # -- the indexing thread -----------------------------------------------------------------------
    def _run(self, job: Callable, conversation_id: int, items: list, cancel: threading.Event) -> None:
        try:
            job(conversation_id, items, cancel)
        except Exception as e:  # the store closed (quitting), or a bug: never a silent stop
            log.warning("indexing stopped", exc_info=True)
            self.route.post(self.failed.emit, f"Indexing stopped: {e}")
        finally:
            self.route.post(self._job_done)

    def _store(self, fn: Callable[[Store], T]) -> T:
        return self.bridge.submit(fn).result()

    def _add(self, conversation_id: int, paths: list[Path], cancel: threading.Event) -> None:
        files: list[tuple[Path, str]] = []
        for path in paths:
            if path.is_dir():
                try:
                    found, _skipped = folder_files(path)
                except UnreadableFileError as e:
                    self.route.post(self.failed.emit, str(e))
                    continue
                files += [(f, f.relative_to(path.parent).as_posix()) for f in found]
            else:
                files.append((path, path.name))
        if not files:
            return
        documents = self._store(lambda store: store.library.add_all(conversation_id,
                                                                    [(p.resolve(), name) for p, name in files]))
        self._index(conversation_id, documents, cancel)

    def _reindex(self, conversation_id: int, document_ids: list[int], cancel: threading.Event) -> None:
        documents = self._store(lambda store: [store.library.get(i) for i in document_ids])
        self._index(conversation_id, documents, cancel)

    def _index(self, conversation_id: int, documents: list[LibraryDocument], cancel: threading.Event) -> None:
        self._store(lambda store: [store.library.set_status(d.id, "indexing") for d in documents
                                   if store.library.exists(d.id)])
        self.route.post(self.changed.emit, conversation_id)
        for number, document in enumerate(documents, 1):
            if cancel.is_set():
                try:
                    self._end(document, "cancelled", "")
                except NotFoundError:
                    pass
                continue
            self._index_one(conversation_id, document, number, len(documents), cancel)
            self.route.post(self.changed.emit, conversation_id)
        self.route.post(self.changed.emit, conversation_id)

    def _index_one(self, conversation_id: int, document: LibraryDocument, number: int, total: int,
                   cancel: threading.Event) -> None:
        try:
            self._read_and_store(conversation_id, document, number, total, cancel)
        except NotFoundError:  # removed from the library while it was being indexed
            pass

    def _read_and_store(self, conversation_id: int, document: LibraryDocument, number: int, total: int,
                        cancel: threading.Event) -> None:
        def say(stage: str, fraction: float) -> None:
            self.route.post(self._show, IndexProgress(conversation_id, document.name, number, total, stage,
                                                      fraction), document.id)

        say("reading", 0.0)
        try:
            embedder = self.embedder.get()
            known = document.content_hash if document.chunks and document.embedder == embedder.source else None
            indexed = index_document(Path(document.path), embedder, cancelled=cancel.is_set, progress=say,
                                     known_hash=known)
        except ReadCancelled:
            return self._end(document, "cancelled", "")
        except (UnreadableFileError, EngineError) as e:
            return self._end(document, "failed", str(e))
        if indexed is None:  # the same bytes as when it was indexed
            self._store(lambda store: store.library.set_status(document.id, "ready"))
        else:
            self._store(lambda store: stored(store, document.id, indexed, embedder.source))

    def _end(self, document: LibraryDocument, status: str, why: str) -> None:
        """A document that was not indexed now; one indexed before keeps that index, searchable."""
        if document.chunks:
            status, why = "ready", (f"Not indexed again: {why}" if why else "")
        self._store(lambda store: store.library.set_status(document.id, status, why))
