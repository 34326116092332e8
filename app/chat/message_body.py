"""A message's rendered text: read-only rich text as tall as its content and as wide as the view.

Split from `message_view`, which puts it under the message's header. Its text wraps at spaces and,
inside a long word (a URL, a path), anywhere (`QTextOption.WrapAtWordBoundaryOrAnywhere`), so no
message can be wider than the view.
"""

from __future__ import annotations

import math
from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextOption, QWheelEvent
from PySide6.QtWidgets import QApplication, QFrame, QScrollArea, QSizePolicy, QTextBrowser, QWidget


class MessageBody(QTextBrowser):
    """Read-only rich text as tall as its content and as wide as the view, with no scroll bars;
    the mouse wheel over it scrolls the chat view."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.viewport().setAutoFillBackground(False)
        # No style sheet for transparency: a styled widget stops following palette changes (dark mode).
        self.document().setDocumentMargin(2)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)

    def _fit_height(self) -> None:
        height = math.ceil(self.document().size().height()) + 2 * self.frameWidth() + 1
        if height != self.height():
            self.setFixedHeight(height)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit_height()

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 (Qt name)
        """Scroll the conversation, not this (never scrolling) text."""
        area = self.parentWidget()
        while area is not None and not isinstance(area, QScrollArea):
            area = area.parentWidget()
        if area is None:
            event.ignore()
        else:
            QApplication.sendEvent(area.verticalScrollBar(), event)
