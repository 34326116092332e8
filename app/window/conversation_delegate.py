"""How the conversation list draws its rows: headings as small captions, conversations as one
elided line (with a badge while generating), search hits with a grey snippet; titles edit in place.

Kept apart from `conversation_list` so each file has one job: that one holds the list's behaviour.
"""

from __future__ import annotations

import html
from typing import Protocol

from PySide6.QtCore import QModelIndex, QSize, Qt
from PySide6.QtGui import QAbstractTextDocumentLayout, QColor, QFont, QFontMetrics, QPalette, QTextDocument
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget


class RowOwner(Protocol):
    """The list widget a delegate paints for (`ConversationList`, which imports this module)."""

    def request_rename(self, conversation_id: int, title: str) -> bool: ...


BADGE = "●"
BADGE_COLOR = QColor("#2f9e55")

ID_ROLE = Qt.ItemDataRole.UserRole
KIND_ROLE = Qt.ItemDataRole.UserRole + 1
""""heading", "conversation", "hit" or "hint" (a grey line such as "No matches")."""
TITLE_ROLE = Qt.ItemDataRole.UserRole + 2
"""The stored title ("" when untitled); DisplayRole holds what is shown."""
GENERATING_ROLE = Qt.ItemDataRole.UserRole + 3
SNIPPET_ROLE = Qt.ItemDataRole.UserRole + 4
"""Search snippet as HTML (matches in <b>)."""


LEAD_SHARE = 0.3
"""Of a narrow row's width, at most this much text comes before a snippet's first match."""


def snippet_for_width(snippet: str, metrics: QFontMetrics, width: int) -> str:
    """The snippet (HTML, matches in <b>) with the words before its first match cut to "…" and
    a few words, so that in a row `width` pixels wide the matched word is on the first line."""
    start = snippet.find("<b>")
    lead = html.unescape(snippet[:start]) if start > 0 else ""
    room = int(width * LEAD_SHARE)
    if not lead or metrics.horizontalAdvance(lead) <= room:
        return snippet
    words = lead.split(" ")
    kept = ""
    while words:
        candidate = f"{words[-1]} {kept}" if kept else words[-1] + (" " if lead.endswith(" ") else "")
        if metrics.horizontalAdvance("…" + candidate) > room:
            break
        kept = candidate
        words.pop()
    return "…" + html.escape(kept) + snippet[start:]


class ConversationDelegate(QStyledItemDelegate):
    """Paints headings as small bold captions, conversations as one elided line with a badge while
    generating, search hits with a grey snippet line; edits a title in place."""

    def __init__(self, owner: "RowOwner") -> None:
        super().__init__(owner)
        self.owner = owner

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802
        line = option.fontMetrics.height()
        kind = index.data(KIND_ROLE)
        if kind == "heading":
            return QSize(0, int(line * 0.85) + (6 if index.row() == 0 else 16))
        if kind == "hit":
            return QSize(0, line + 2 * int(line * 0.9) + 16)
        return QSize(0, line + 14)

    def paint(self, painter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        kind, text, font, line = index.data(KIND_ROLE), opt.text, QFont(opt.font), opt.fontMetrics.height()
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        ink = opt.palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        faint = ink if selected else opt.palette.color(QPalette.ColorRole.PlaceholderText)
        rect = opt.rect.adjusted(8, 0, -8, 0)
        left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        painter.save()
        if kind in ("heading", "hint"):
            if kind == "heading":
                font.setBold(True)
                font.setPointSizeF(font.pointSizeF() * 0.85)
                left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom
            painter.setFont(font)
            painter.setPen(faint)
            painter.drawText(rect.adjusted(0, 0, 0, -3), left, text)
        else:
            opt.text = ""
            opt.widget.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, opt, painter, opt.widget)
            top = rect.adjusted(0, 7, 0, 0)
            top.setHeight(line)
            if index.data(GENERATING_ROLE):
                painter.setPen(ink if selected else BADGE_COLOR)
                painter.drawText(top, left, BADGE)
                top.setLeft(top.left() + opt.fontMetrics.horizontalAdvance(BADGE + " "))
            painter.setPen(ink)
            painter.setFont(font)
            painter.drawText(top, left, opt.fontMetrics.elidedText(text, Qt.TextElideMode.ElideRight, top.width()))
            if kind == "hit":
                font.setPointSizeF(font.pointSizeF() * 0.9)
                snippet = snippet_for_width(index.data(SNIPPET_ROLE) or "", QFontMetrics(font), rect.width())
                self._paint_html(painter, snippet, font, faint, rect.adjusted(0, 9 + line, 0, -6))
        painter.restore()

    @staticmethod
    def _paint_html(painter, html: str, font: QFont, color: QColor, rect) -> None:
        doc = QTextDocument()
        doc.setDefaultFont(font)
        doc.setDocumentMargin(0)
        doc.setHtml(html)
        doc.setTextWidth(rect.width())
        context = QAbstractTextDocumentLayout.PaintContext()
        context.palette.setColor(QPalette.ColorRole.Text, color)
        painter.translate(rect.topLeft())
        painter.setClipRect(0, 0, rect.width(), rect.height())
        doc.documentLayout().draw(painter, context)

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem, index: QModelIndex) -> None:  # noqa: N802
        editor.setGeometry(option.rect.adjusted(4, 3, -4, -3))

    def setEditorData(self, editor: QWidget, index: QModelIndex) -> None:  # noqa: N802
        editor.setText(index.data(TITLE_ROLE) or "")
        editor.selectAll()

    def setModelData(self, editor: QWidget, model, index: QModelIndex) -> None:  # noqa: N802
        # The store owns titles: ask for the rename; the refreshed list will show it.
        title = " ".join(editor.text().split())
        if title != index.data(TITLE_ROLE) and self.owner.request_rename(index.data(ID_ROLE), title):
            model.setData(index, title, Qt.ItemDataRole.DisplayRole)
            model.setData(index, title, TITLE_ROLE)
