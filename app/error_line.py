"""An error as the window shows it: one sentence in words (app.error_words), and a "Details" toggle
that opens the class name and the raw text under it, selectable, for a bug report.

    line = ErrorLine()
    line.show_error(error)        # an exception or a stored "ClassName: text"
    line.show_text("Found 3 models.")   # a plain message: no toggle
    line.clear()                  # hidden
"""

from __future__ import annotations

import re
from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from app.error_words import in_words

_LONG_RUN = re.compile(r"\S{24,}")
_BREAK_AFTER = re.compile(r"([/:._\-,=&?\]\)])")


def breakable(text: str) -> str:
    """`text` with zero-width spaces after the punctuation of long runs (paths, URLs, tracebacks'
    dotted names), so a word-wrapping label can break them instead of growing past its window."""
    return _LONG_RUN.sub(lambda m: _BREAK_AFTER.sub("\\1\u200b", m.group(0)), text)


class ErrorLine(QWidget):
    """A sentence, and under it (behind "Details") the class name and raw text; hidden when clear."""

    def __init__(self, parent: Optional[QWidget] = None, *, accessible_name: str = "Error") -> None:
        super().__init__(parent)
        self.sentence = QLabel(wordWrap=True, accessibleName=accessible_name)
        self.sentence.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.sentence.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.toggle = QToolButton(text="Details", checkable=True, autoRaise=True,
                                  accessibleName="Show the error's details",
                                  toolTip="Show the error as the program reported it")
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.toggled.connect(self._toggled)
        self.details = QLabel(wordWrap=True, accessibleName="Error details")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.details.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.details.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.sentence, stretch=1)
        row.addWidget(self.toggle, alignment=Qt.AlignmentFlag.AlignTop)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addLayout(row)
        box.addWidget(self.details)
        self.raw = ""
        """The details shown behind the toggle ("" when there are none)."""
        self.hide()

    def show_error(self, error: BaseException | str) -> None:
        words = in_words(error)
        self._show(words.sentence, words.details)

    def show_text(self, text: str) -> None:
        self._show(text, "")

    def clear(self) -> None:
        self._show("", "")

    def text(self) -> str:
        """The sentence shown ("" when clear), without the break hints."""
        return self.sentence.text().replace("\u200b", "")

    def _show(self, sentence: str, details: str) -> None:
        if (self.text(), self.raw) == (sentence, details):
            return
        self.raw = details
        self.sentence.setText(breakable(sentence))
        self.details.setText(breakable(details))
        self.toggle.setChecked(False)
        self.toggle.setVisible(bool(details))
        self.setVisible(bool(sentence))

    def _toggled(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.toggle.setText("Hide details" if shown else "Details")
