"""The library where the user types: a badge in the header while the conversation has documents
("Library: 3 documents", compact "Library: 3"), a Library button beside the composer that opens its
dialog, and a line over the composer while files are indexed (what, how far, and Cancel). Each
gives up width rather than take it, down to the smallest window.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QSizePolicy, QToolButton, QWidget

from app.chat.header import PromptBadge
from app.fitting import ElidedLabel
from app.store import LibraryDocument

from .indexer import IndexProgress

TOOLTIP_NAMES = 12
"""Documents named in the badge's tooltip; the rest are counted."""


def documents_words(n: int) -> str:
    return f"{n:,} document" + ("" if n == 1 else "s")


class LibraryBadge(PromptBadge):
    """"Library: 3 documents" in the header (hidden while the conversation has none)."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("libraryBadge")
        self.setAccessibleName("Documents in this conversation's library")

    def show_documents(self, documents: list[LibraryDocument]) -> None:
        if documents:
            self.setText(f"Library: {documents_words(len(documents))}", f"Library: {len(documents):,}")
            names = [d.name for d in documents[:TOOLTIP_NAMES]]
            more = len(documents) - len(names)
            self.setToolTip("Replies here read the passages of these documents that answer each question:\n"
                            + "\n".join(names) + (f"\nand {more:,} more" if more > 0 else ""))
        self.setVisible(bool(documents))


class LibraryButton(QToolButton):
    """Opens the conversation's library; says how many documents it holds."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent, text="Library…", accessibleName="Library")
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.show_count(0)

    def show_count(self, n: int) -> None:
        self.setText(f"Library · {n:,}" if n else "Library…")
        self.setToolTip("Documents too large for the model's context: add files or folders, and each reply "
                        "reads the passages that answer the question" + (f" ({documents_words(n)} here)" if n else ""))


class IndexLine(QWidget):
    """"Indexing manual.pdf (3 of 12): embedding, 40 %" with a bar and Cancel; hidden when idle."""

    cancel_clicked = Signal()

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Library indexing")
        self.label = ElidedLabel()
        self.label.setAccessibleName("What is being indexed")
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.bar = QProgressBar(accessibleName="Indexing progress", maximumWidth=120, maximumHeight=12,
                                textVisible=False, minimum=0, maximum=1000)
        self.cancel_button = QToolButton(text="Cancel", autoRaise=True, accessibleName="Cancel indexing",
                                         toolTip="Stop indexing; the files indexed so far stay in the library")
        self.cancel_button.clicked.connect(self.cancel_clicked)
        box = QHBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.label, stretch=1)
        box.addWidget(self.bar)
        box.addWidget(self.cancel_button)
        self.hide()

    def show_progress(self, progress: Optional[IndexProgress]) -> None:
        if progress is None:
            self.hide()
            return
        self.label.setText(progress.words)
        self.setToolTip(progress.words)
        self.bar.setValue(round(progress.fraction * 1000))
        self.show()
