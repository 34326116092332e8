"""Under a reply that read passages of its conversation's library: "Sources: manual.pdf p. 12,
§3.2 · guide.md §Install", each a link that opens the passage as the model read it, and "More
passages", which writes the reply again reading more of them (a new version; this one is kept)."""

from __future__ import annotations

import html
from typing import Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QPalette
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

from app.chat.message_attachments import ChipButton
from app.fitting import FlowLayout
from app.store import Source

GONE = ("Its document has since been removed from the library or indexed again; this is the text "
        "the reply read.")


class MessageSources(QWidget):
    """A reply's sources as links on as many lines as they need; hidden for a reply with none."""

    more_clicked = Signal()

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Sources")
        self.sources: tuple[Source, ...] = ()
        self.links: list[ChipButton] = []
        self.viewer: Optional[QDialog] = None
        self.title = QLabel("Sources:")
        self.title.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.more_button = QToolButton(text="More passages", autoRaise=True, accessibleName="More passages",
                                       toolTip="Write this reply again, reading more passages of the library "
                                               "(a new version; this one is kept)")
        self.more_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.more_button.clicked.connect(self.more_clicked)
        self._box = FlowLayout(self, spacing=4)
        self._box.setContentsMargins(0, 2, 0, 2)
        self._box.addWidget(self.title)
        self._box.addWidget(self.more_button)
        self.hide()

    def show_sources(self, sources: tuple[Source, ...]) -> None:
        if sources == self.sources:
            return
        self.sources = sources
        for link in self.links:
            self._box.removeWidget(link)
            link.deleteLater()
        self.links = []
        for n, source in enumerate(sources, 1):
            link = ChipButton(f"[{n}] {source.label}", "file-text", autoRaise=True,
                              accessibleName=f"Source {n}: {source.label}",
                              toolTip=f"{source.label}: click to read the passage the reply read")
            link.setCursor(Qt.CursorShape.PointingHandCursor)
            link.clicked.connect(lambda _=False, s=source: self.open(s))
            self._box.insertWidget(n, link)
            self.links.append(link)
        self.setVisible(bool(sources))

    def open(self, source: Source) -> QDialog:
        """The passage as the model read it, in a window of its own (non-modal)."""
        if self.viewer is not None:
            self.viewer.close()
        self.viewer = SourceViewer(source, self.window())
        self.viewer.show()
        return self.viewer


class SourceViewer(QDialog):
    """One passage a reply read: where it comes from, and its text, read-only and selectable."""

    def __init__(self, source: Source, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(source.label)
        self.setAccessibleName(f"Source {source.label}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        gone = f" {GONE}" if source.chunk_id is None else ""
        self.about = QLabel(f"<b>{html.escape(source.name)}</b> {html.escape(source.location)}: the passage the reply "
                            f"read.{gone}", wordWrap=True)
        self.text = QPlainTextEdit(source.text, readOnly=True, accessibleName="Passage text")
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        box = QVBoxLayout(self)
        box.addWidget(self.about)
        box.addWidget(self.text, stretch=1)
        box.addWidget(buttons)
        self.resize(640, 420)
