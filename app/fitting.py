"""Widgets that fit any width, so no row of the window can push it wider than the user made it:
a flow layout (a row that wraps), a label that elides (with a shorter form tried first), and a
label that wraps long words (an error with no spaces, a URL, a path).

    row = FlowLayout(spacing=6)                    # buttons or chips: as many per line as fit
    label = ElidedLabel("Own system prompt", compact="Own prompt")   # "Own prompt", then "Own…"
    note = WrapLabel("Failed: ServerUnreachableError:connection-refused:127.0.0.1:8799…")

Qt's plain QLabel and QHBoxLayout ask for their whole text or row as their minimum width, and a
layout gives it to them by widening the window or crushing a neighbour (LESSONS: a row of chips,
an error line or a header label pushed a Qt layout wider than its window).
"""

from __future__ import annotations

import re
from typing import Optional

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QLayout, QLayoutItem, QSizePolicy, QWidget, QWidgetItem

BREAK = "\u200b"
"""Zero-width space: where a long word may break (it draws nothing)."""
LONG_WORD = 16
"""A run of characters without a space longer than this gets places to break."""


class FlowLayout(QLayout):
    """Items left to right, wrapping to a new line when the next one does not fit; an item wider
    than the whole line is given the line's width. Its minimum width is its widest item's minimum."""

    def __init__(self, parent: Optional[QWidget] = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 (Qt name)
        self._items.append(item)

    def insertWidget(self, index: int, widget: QWidget) -> None:  # noqa: N802 (Qt name)
        """Put `widget` at `index` (like QBoxLayout's)."""
        self.addChildWidget(widget)
        self._items.insert(max(0, min(index, len(self._items))), QWidgetItem(widget))
        self.invalidate()

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> Optional[QLayoutItem]:  # noqa: N802 (Qt name)
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> Optional[QLayoutItem]:  # noqa: N802 (Qt name)
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 (Qt name)
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt name)
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt name)
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 (Qt name)
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        shown = [i for i in self._items if not i.isEmpty()]
        m = self.contentsMargins()
        width = sum(i.sizeHint().width() for i in shown) + self.spacing() * max(0, len(shown) - 1)
        height = max((i.sizeHint().height() for i in shown), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802 (Qt name)
        size = QSize()
        for item in self._items:
            if not item.isEmpty():
                size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Place the items line by line (each line's items centred on it); returns the height used."""
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        lines: list[list[tuple[QLayoutItem, int]]] = [[]]
        x = area.x()
        for item in self._items:
            if item.isEmpty():
                continue
            width = max(min(item.sizeHint().width(), area.width()), item.minimumSize().width())
            if lines[-1] and x + width > area.right() + 1:
                lines.append([])
                x = area.x()
            lines[-1].append((item, width))
            x += width + self.spacing()
        y = area.y()
        for line in lines:
            height = max((item.sizeHint().height() for item, _ in line), default=0)
            x = area.x()
            for item, width in line:
                if move:
                    h = item.sizeHint().height()
                    item.setGeometry(QRect(QPoint(x, y + (height - h) // 2),
                                           QSize(min(width, max(area.width(), 1)), h)))
                x += width + self.spacing()
            y += height + self.spacing()
        return max(0, y - self.spacing() - rect.y()) + m.bottom()


class ElidedLabel(QLabel):
    """One line that gives up width instead of taking it: its whole text when it fits, else its
    `compact` form, else that elided with "…" (never clipped mid-letter). `text()` stays the whole
    text (what screen readers read); the tooltip is the caller's."""

    MIN_WIDTH = 24
    """Narrowest it asks to be (room for a letter and "…")."""

    def __init__(self, text: str = "", parent: Optional[QWidget] = None, *, compact: str = "",
                 min_width: Optional[int] = None) -> None:
        super().__init__(text, parent)
        self._compact = compact
        self.compact_mode = False
        self._min_width = self.MIN_WIDTH if min_width is None else min_width
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def setText(self, text: str, compact: str = "") -> None:  # noqa: N802 (Qt name)
        """The whole text, and an optional shorter form shown when it does not fit."""
        self._compact = compact
        super().setText(text)
        self.updateGeometry()
        self.update()

    def compact_text(self) -> str:
        return self._compact

    def whole_width(self) -> int:
        """Pixels the whole text asks for."""
        return self._width_for(self.text())

    def _width_for(self, text: str) -> int:
        m = self.contentsMargins()
        return self.fontMetrics().horizontalAdvance(text) + 2 * self.margin() + m.left() + m.right() + 2

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        """The whole text's width; the compact text's in compact mode (`set_compact_mode`)."""
        text = self._compact if self.compact_mode and self._compact else self.text()
        return QSize(self._width_for(text), super().sizeHint().height())

    def set_compact_mode(self, compact: bool) -> None:
        """Ask only for the compact text's width (the row is short of room; see `StatusParts`)."""
        if compact != self.compact_mode:
            self.compact_mode = compact
            self.updateGeometry()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return QSize(min(self._min_width, self.sizeHint().width()), super().minimumSizeHint().height())

    def room(self) -> int:
        """Pixels the text may use now."""
        return max(0, self.contentsRect().width() - 2 * self.margin())

    def shown_text(self, room: Optional[int] = None) -> str:
        """What is drawn at `room` pixels (default: the room there is now)."""
        room = self.room() if room is None else room
        metrics = self.fontMetrics()
        for candidate in (self.text(), self._compact):
            if candidate and metrics.horizontalAdvance(candidate) <= room:
                return candidate
        return metrics.elidedText(self._compact or self.text(), Qt.TextElideMode.ElideRight, room)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt name)
        """Elided at paint time, from the width it has then: never stale after a layout change."""
        painter = QPainter(self)
        rect = self.contentsRect().adjusted(self.margin(), self.margin(), -self.margin(), -self.margin())
        self.style().drawItemText(painter, rect, int(self.alignment()), self.palette(), self.isEnabled(),
                                  self.shown_text(rect.width()), self.foregroundRole())
        painter.end()


class WrapLabel(QLabel):
    """A label that wraps at spaces and, inside a long word (a URL, a path, an error with no
    spaces), anywhere: its minimum width is a few letters, never the longest word. `text()` is
    the text as given."""

    def __init__(self, text: str = "", parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self._raw = ""
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt name)
        self._raw = text
        super().setText(breakable(text))

    def text(self) -> str:
        return self._raw

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return QSize(self.fontMetrics().horizontalAdvance("MMMM"), super().minimumSizeHint().height())


def breakable(text: str) -> str:
    """`text` with a zero-width space after each character of every word longer than `LONG_WORD`,
    so Qt may break it anywhere (it draws the same)."""
    return re.sub(r"\S{%d,}" % (LONG_WORD + 1), lambda m: BREAK.join(m.group(0)), text)

