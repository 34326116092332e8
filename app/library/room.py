"""Puts the library into the main window: the embedding model the replies search with, the indexing
thread, the Library button, badge and indexing line, Conversation ▸ Library…, "Add to library" on a
file too large for the context, and the embedding model's memory in the status bar's figures."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtWidgets import QMainWindow

from app.bridge import Bridge
from app.chat.labels import title_from
from app.store import LibraryDocument

from .controls import IndexLine, LibraryBadge, LibraryButton
from .dialog import LibraryDialog
from .embedder import SharedEmbedder
from .indexer import IndexProgress, Indexer

NOTICE_MS = 8000


class LibraryRoom:
    """`LibraryRoom(window, bridge)`; `close()` before the bridge closes (indexing stops)."""

    def __init__(self, window: QMainWindow, bridge: Bridge, embedder: Optional[SharedEmbedder] = None) -> None:
        self.window, self.bridge = window, bridge
        self._own_embedder = embedder is None  # one handed in (tests share one) is its owner's to close
        self.embedder = embedder or SharedEmbedder()
        bridge.embedder_for = self.embedder.get
        self.indexer = Indexer(bridge, self.embedder, window)
        self.badge, self.button, self.line = LibraryBadge(), LibraryButton(), IndexLine()
        window.chat.add_parts(self.badge, self.button, self.line)
        self.dialog: Optional[LibraryDialog] = None
        self.button.clicked.connect(self.open_dialog)
        self.line.cancel_clicked.connect(self.indexer.cancel)
        self.indexer.progress.connect(self._progress)
        self.indexer.changed.connect(self._changed)
        self.indexer.failed.connect(lambda why: window.notices.show(why, NOTICE_MS))
        window.chat.page_changed.connect(self.show)
        tray = window.chat.files.tray
        tray.library_offered = True  # a file too large for the context: "Add to library"
        tray.library_requested.connect(lambda path: self.add_paths([path]))
        window.figures.embedder_memory = self.embedder.memory
        menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Conversation")
        self.action = menu.addAction("&Library…")
        self.action.triggered.connect(lambda _checked=False: self.open_dialog())
        self.show(window.chat.current_id)

    # -- the conversation shown --------------------------------------------------------------------
    def show(self, conversation_id: Optional[int]) -> None:
        """Show the library of the conversation now shown (None: a new page, which has none)."""
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.set_conversation(conversation_id)
        if conversation_id is None:
            self._shown(None, [])
            return
        self.bridge.run(lambda store: store.library.documents(conversation_id)).success(
            lambda documents: self._shown(conversation_id, documents))

    def _shown(self, conversation_id: Optional[int], documents: list[LibraryDocument]) -> None:
        if conversation_id != self.window.chat.current_id:
            return
        self.badge.show_documents(documents)
        self.button.show_count(len(documents))
        if any(d.chunks for d in documents):
            self.indexer.warm()  # the first question then waits for no weights to load

    def _changed(self, conversation_id: int) -> None:
        if conversation_id == self.window.chat.current_id:
            self.show(conversation_id)
        elif self.dialog is not None and self.dialog.conversation_id == conversation_id:
            self.dialog.refresh()

    def _progress(self, progress: Optional[IndexProgress]) -> None:
        self.line.show_progress(progress)
        if self.dialog is not None:
            self.dialog.show_progress(progress)
            if progress is None:
                self.dialog.refresh()

    def open_dialog(self) -> LibraryDialog:
        """The library of the conversation shown (non-modal)."""
        if self.dialog is not None:
            self.dialog.close()
        self.dialog = LibraryDialog(self, self.window.chat.current_id, self.window)
        self.dialog.show()
        return self.dialog

    # -- changes -----------------------------------------------------------------------------------
    def add_paths(self, paths: list[Path]) -> None:
        """Index files and folders into the shown conversation's library; on a new page, a
        conversation named after the first of them is started for them."""
        cid = self.window.chat.current_id
        if cid is not None:
            self.indexer.add_paths(cid, paths)
            return
        title = title_from(Path(paths[0]).name)
        self.bridge.run(lambda store: store.create_conversation(title)).success(
            lambda c: (self.window.chat.conversation_created.emit(c.id), self.indexer.add_paths(c.id, paths)))

    def reindex(self, conversation_id: Optional[int], document_ids: list[int]) -> None:
        if conversation_id is not None and document_ids:
            self.indexer.reindex(conversation_id, document_ids)

    def remove(self, conversation_id: Optional[int], document_ids: list[int]) -> None:
        """Remove documents and their passages (replies keep the passages they read)."""
        if conversation_id is not None and document_ids:
            self.bridge.run(lambda store: store.library.remove(document_ids)).success(
                lambda _n: self._changed(conversation_id))

    def close(self) -> None:
        if self.dialog is not None:
            self.dialog.close()
        self.indexer.close()
        if self._own_embedder:
            self.embedder.close()
