"""Conversation ▸ Library…: the conversation's documents with their state (waiting, indexing with
how far, ready with its passages, changed since it was indexed, missing, failed and why), and Add
files…, Add folder…, Re-index, Remove and Stop indexing. Non-modal: the chat goes on beside it.

Files are checked against what was indexed (size and modification time) on the store's thread, not
here: a library of thousands of files on a slow disk must not stall the window.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Protocol

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel,
                               QPushButton, QSizePolicy, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from app.bridge import Bridge
from app.chat.attachment_chip import file_size
from app.file_dialogs import choose_folder, open_files
from app.store import LibraryDocument, Store

from .controls import documents_words
from .indexer import Indexer, IndexProgress
from .reading import LIBRARY_KINDS, SUFFIXES

FILE_FILTER = (f"Documents ({' '.join('*' + s for s in sorted(SUFFIXES))});;All files (*)")
ABOUT = ("Documents too large for the model's context. Each reply reads the passages that answer the "
         f"question, and shows them as its sources. A library reads {LIBRARY_KINDS}.")
NEW_PAGE = "Adding a document starts a conversation for it."


def file_state(document: LibraryDocument) -> str:
    """"missing", "changed" (size or time differ from when it was indexed) or "" (as indexed)."""
    try:
        stat = os.stat(document.path)
    except OSError:
        return "missing"
    if document.modified is not None and (stat.st_size != document.size or stat.st_mtime != document.modified):
        return "changed"
    return ""


def status_words(document: LibraryDocument, state: str, progress: Optional[IndexProgress],
                 current: Optional[int]) -> tuple[str, str]:
    """(what the Status column says, its tooltip)."""
    if document.status == "indexing":
        if current == document.id and progress is not None:
            return f"{progress.stage} {progress.fraction:.0%}", progress.words
        return "waiting", "Waiting to be indexed"
    if document.status == "failed":
        return "failed", document.error
    if document.status in ("cancelled", "interrupted"):
        done = "stopped" if document.status == "cancelled" else "not finished"
        return done, f"Indexing {done} before the end: Re-index reads it again"
    if state == "missing":
        return "file missing", f"{document.path} is gone; its passages stay until you remove it"
    if state == "changed":
        return "changed", "The file changed since it was indexed: Re-index reads it again"
    return ("ready" if not document.error else "ready (old)"), document.error or f"{document.chunks:,} passages"


class Actions(Protocol):
    """What the dialog asks of the window's library (`LibraryRoom`)."""

    bridge: Bridge
    indexer: Indexer

    def add_paths(self, paths: list[Path]) -> None: ...

    def reindex(self, conversation_id: Optional[int], document_ids: list[int]) -> None: ...

    def remove(self, conversation_id: Optional[int], document_ids: list[int]) -> None: ...


class LibraryDialog(QDialog):
    """The library of `conversation_id` (None: a new page; adding starts a conversation)."""

    def __init__(self, room: Actions, conversation_id: Optional[int], parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.room = room
        self.conversation_id = conversation_id
        self.documents: list[LibraryDocument] = []
        self._rows: list[tuple[LibraryDocument, str]] = []
        self.progress: Optional[IndexProgress] = None
        self.setWindowTitle("Library")
        self.setAccessibleName("Conversation library")
        self.about = QLabel(ABOUT, wordWrap=True)
        self.about.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.list = QTreeWidget(accessibleName="Documents", rootIsDecorated=False, uniformRowHeights=True)
        self.list.setHeaderLabels(["Document", "Status", "Passages", "Size"])
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        header = self.list.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.list.itemSelectionChanged.connect(self._update_buttons)
        self.summary = QLabel(accessibleName="Library summary")
        self.add_files_button = QPushButton("Add files…", accessibleName="Add files to the library")
        self.add_files_button.clicked.connect(self.add_files)
        self.add_folder_button = QPushButton("Add folder…", accessibleName="Add a folder to the library")
        self.add_folder_button.clicked.connect(self.add_folder)
        self.reindex_button = QPushButton("Re-index", accessibleName="Re-index the selected documents",
                                          toolTip="Read the selected documents again (an unchanged file is skipped)")
        self.reindex_button.clicked.connect(lambda: room.reindex(self.conversation_id, self.selected_ids()))
        self.remove_button = QPushButton("Remove", accessibleName="Remove the selected documents",
                                         toolTip="Remove the selected documents and their passages; replies "
                                                 "keep what they read")
        self.remove_button.clicked.connect(lambda: room.remove(self.conversation_id, self.selected_ids()))
        self.stop_button = QPushButton("Stop indexing", accessibleName="Stop indexing")
        self.stop_button.clicked.connect(room.indexer.cancel)
        self.setup_layout()
        self.refresh()

    def setup_layout(self) -> None:
        actions = QHBoxLayout()
        for button in (self.add_files_button, self.add_folder_button, self.reindex_button, self.remove_button):
            actions.addWidget(button)
        actions.addStretch(1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)
        bottom = QHBoxLayout()
        bottom.addWidget(self.summary, stretch=1)
        bottom.addWidget(self.stop_button)
        bottom.addWidget(close)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        box = QVBoxLayout(self)
        box.addWidget(self.about)
        box.addLayout(actions)
        box.addWidget(self.list, stretch=1)
        box.addLayout(bottom)
        self.resize(620, 400)

    # -- showing -----------------------------------------------------------------------------------
    def set_conversation(self, conversation_id: Optional[int]) -> None:
        self.conversation_id = conversation_id
        self.refresh()

    def refresh(self) -> None:
        """Read the documents (and check their files) on the store's thread, then show them."""
        cid = self.conversation_id
        if cid is None:
            self._show(None, [])
            return
        self.room.bridge.run(lambda store: _documents_and_files(store, cid)).success(
            lambda found: self._show(cid, found))

    def show_progress(self, progress: Optional[IndexProgress]) -> None:
        self.progress = progress
        for i, (document, state) in enumerate(self._rows):
            if document.status == "indexing":
                text, tip = status_words(document, state, progress, self.room.indexer.current)
                item = self.list.topLevelItem(i)
                item.setText(1, text)
                item.setToolTip(1, tip)
        self._update_buttons()

    def _show(self, conversation_id: Optional[int], rows: list[tuple[LibraryDocument, str]]) -> None:
        if conversation_id != self.conversation_id:
            return  # moved on to another conversation meanwhile
        selected = set(self.selected_ids())
        self._rows = rows
        self.documents = [d for d, _ in rows]
        self.list.clear()
        for document, state in rows:
            text, tip = status_words(document, state, self.progress, self.room.indexer.current)
            item = QTreeWidgetItem([document.name, text, f"{document.chunks:,}" if document.chunks else "",
                                    file_size(document.size) if document.size else ""])
            item.setData(0, Qt.ItemDataRole.UserRole, document.id)
            item.setToolTip(0, document.path)
            item.setToolTip(1, tip)
            self.list.addTopLevelItem(item)
            item.setSelected(document.id in selected)
        passages = sum(d.chunks for d in self.documents)
        self.summary.setText(f"{documents_words(len(self.documents))}, {passages:,} passages" if rows else
                             (NEW_PAGE if conversation_id is None else "No documents yet."))
        self._update_buttons()

    def selected_ids(self) -> list[int]:
        return [item.data(0, Qt.ItemDataRole.UserRole) for item in self.list.selectedItems()]

    def _update_buttons(self) -> None:
        some = bool(self.list.selectedItems())
        self.reindex_button.setEnabled(some)
        self.remove_button.setEnabled(some)
        self.stop_button.setVisible(self.room.indexer.busy)

    # -- adding ------------------------------------------------------------------------------------
    def add_files(self) -> None:
        paths = open_files(self, "Add files to the library", FILE_FILTER)
        if paths:
            self.room.add_paths(paths)

    def add_folder(self) -> None:
        folder = choose_folder(self, "Add a folder to the library")
        if folder is not None:
            self.room.add_paths([folder])


def _documents_and_files(store: Store, conversation_id: int) -> list[tuple[LibraryDocument, str]]:
    return [(d, file_state(d)) for d in store.library.documents(conversation_id)]
