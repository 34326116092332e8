"""File ▸ Export… and File ▸ Import JSON…: a conversation to a Markdown or JSON file and back.

    files = ConversationFiles(window, bridge)
    files.export(conversation_id)    # asks where, writes off the GUI thread, reports in the status bar
    files.import_json()              # asks which file, imports off the GUI thread, opens the copy

The store does the conversion (`export_markdown`, `export_json`, `import_json`); reading and writing
the file run in the same job on the store thread, so a big conversation never blocks the window. A bad
file or a failed write is shown in a dialog with the whole reason; nothing is half-imported (the store
imports in one transaction).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from app.bridge import Bridge
from app.file_dialogs import open_file, save_file
from app.chat.markdown_render import plain_title
from app.store import export_json, export_markdown, import_json

MARKDOWN_FILTER = "Markdown (*.md)"
JSON_FILTER = "Confab conversation, JSON (*.json)"
MAX_IMPORT_BYTES = 256 << 20
"""Refuse bigger files at once with a clear reason rather than reading them into memory."""


IMPORTED_MARK = "(imported)"
"""Added to an imported conversation's title: the copy is told from the original in the list."""


def file_name(title: str, suffix: str) -> str:
    """A safe file name from a conversation title ("Untitled conversation" when none)."""
    stem = re.sub(r'[\\/:*?"<>|\x00-\x1f]+', " ", title).strip(" .")[:80].strip() or "Untitled conversation"
    return f"{stem}{suffix}"


def write_export(store, conversation_id: int, path: Path, as_json: bool) -> Path:
    """Write the export (store thread)."""
    text = export_json(store, conversation_id) if as_json else export_markdown(store, conversation_id)
    path.write_text(text, encoding="utf-8")
    return path


def read_import(store, path: Path):
    """Import `path` as a new conversation (store thread); raises with a reason a user can act on."""
    size = path.stat().st_size
    if size > MAX_IMPORT_BYTES:
        raise ValueError(f"The file is {size / (1 << 20):,.0f} MiB; a conversation export is far smaller.")
    return import_json(store, path.read_bytes(), title_mark=IMPORTED_MARK)


class ConversationFiles(QObject):
    """Export and import from the window; results come back as signals and dialogs."""

    exported = Signal(str)
    """Path of a file just written."""
    imported = Signal(int)
    """Id of the conversation an import created (the window shows it)."""
    failed = Signal(str)
    """Why an export or import did not happen (also shown in a dialog)."""

    def __init__(self, parent: QWidget, bridge: Bridge) -> None:
        super().__init__(parent)
        self.parent_widget = parent
        self.bridge = bridge

    def export(self, conversation_id: Optional[int]) -> None:
        """Ask where and in which format, then write the conversation there."""
        if conversation_id is None:
            self.failed.emit("Open a conversation to export it.")
            return
        # The stored title names the file (the header may still be loading right after a switch).
        self.bridge.run(lambda store: store.get_conversation(conversation_id).title).success(
            lambda title: self._export_as(conversation_id, title)).failure(
            lambda e: self._fail("Could not export", e))

    def _export_as(self, conversation_id: int, title: str) -> None:
        path, chosen = save_file(self.parent_widget, "Export conversation", file_name(plain_title(title), ".md"),
                                 f"{MARKDOWN_FILTER};;{JSON_FILTER}", MARKDOWN_FILTER)
        if path is None:
            return
        as_json = path.suffix.lower() == ".json" or (chosen == JSON_FILTER and path.suffix.lower() != ".md")
        if not path.suffix:
            path = path.with_suffix(".json" if as_json else ".md")
        self.bridge.run(lambda store: write_export(store, conversation_id, path, as_json)).success(
            lambda p: self.exported.emit(str(p))).failure(
            lambda e: self._fail(f"Could not export to {path}", e))

    def import_json(self) -> None:
        """Ask for a JSON export and add it as a new conversation."""
        path = open_file(self.parent_widget, "Import a conversation", f"{JSON_FILTER};;All files (*)")
        if path is None:
            return
        self.bridge.run(lambda store: read_import(store, path)).success(
            lambda c: self.imported.emit(c.id)).failure(
            lambda e: self._fail(f"Could not import {path.name}", e))

    def _fail(self, what: str, error: BaseException) -> None:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        message = f"{what}: {reason}"
        self.failed.emit(message)
        box = QMessageBox(QMessageBox.Icon.Warning, "Confab", what, QMessageBox.StandardButton.Ok,
                          self.parent_widget)
        box.setInformativeText(reason)
        box.setObjectName("conversationFileError")
        box.open()  # window-modal, never blocks the GUI thread's event loop
