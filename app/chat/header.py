"""Pieces of the chat panel's header: the title (shown without Markdown marks), the badge that
says a conversation has its own system prompt, and the settings button. Each gives up width
rather than take it (the title and badge elide, the button drops its words for its icon), so the
header never widens the window or narrows the conversation list, whatever its title or count.

    title = TitleLabel("New conversation")
    title.setText("**Plans** for Monday")      # shows "Plans for Monday"; raw_text() keeps the marks
    badge = PromptBadge()
    badge.show_prompt("You are terse.")         # visible, the prompt in its tooltip; "" hides it
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QPushButton, QSizePolicy, QWidget

from app.chat.markdown_render import plain_title
from app.fitting import ElidedLabel
from app.resources import ui_icon

SETTINGS_BUTTON_TEXT = "Conversation settings…"
"""The header button's name: not "Settings…", which is the app's (Edit ▸ Settings…)."""
BADGE_TEXT = "Own system prompt"
BADGE_COMPACT = "Own prompt"
TOOLTIP_CHARS = 400


class TitleLabel(ElidedLabel):
    """A conversation title; Markdown a reply or a user put in it (`**bold**`) is not shown raw.
    Elided to the room the header leaves it."""

    def __init__(self, text: str = "", parent: Optional[QWidget] = None) -> None:
        super().__init__("", parent, min_width=40)
        # Ignored: the header's other parts get their room first; the title has what is left.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(40)
        self._raw = ""
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt name)
        self._raw = text
        shown = plain_title(text) or text
        super().setText(shown)
        self.setToolTip(shown)

    def raw_text(self) -> str:
        """The title as stored, Markdown included."""
        return self._raw


class PromptBadge(ElidedLabel):
    """A small filled pill in the header, shown while the conversation has its own system prompt.

    Painted from the palette on every paint (no style sheet, which would keep the colors of the theme
    it was set under), so it follows a theme change."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(BADGE_TEXT, parent, compact=BADGE_COMPACT, min_width=36)
        self.setObjectName("promptBadge")
        self.setAccessibleName("This conversation has its own system prompt")
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 0.9)
        self.setFont(font)
        self.setContentsMargins(9, 2, 9, 2)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.prompt = ""
        self.hide()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        box = self.rect().adjusted(0, 3, 0, -3)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self.palette().color(QPalette.ColorRole.Highlight))
        painter.drawRoundedRect(box, box.height() / 2, box.height() / 2)
        painter.setPen(self.palette().color(QPalette.ColorRole.HighlightedText))
        painter.drawText(box, Qt.AlignmentFlag.AlignCenter, self.shown_text())

    def room(self) -> int:
        return max(0, self.contentsRect().width())

    def show_prompt(self, prompt: str) -> None:
        """Show the badge for a non-empty `prompt` (its start in the tooltip), hide it otherwise."""
        self.prompt = prompt.strip()
        if self.prompt:
            short = self.prompt if len(self.prompt) <= TOOLTIP_CHARS else self.prompt[:TOOLTIP_CHARS - 1] + "…"
            self.setToolTip(f"This conversation's system prompt:\n{short}")
        self.setVisible(bool(self.prompt))


class SettingsButton(QPushButton):
    """"Conversation settings…" with a gear; only the gear in compact mode (its name stays in the
    tooltip and the accessible name)."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(ui_icon("settings"), SETTINGS_BUTTON_TEXT, parent)
        self.compact_mode = False

    def whole_width(self) -> int:
        extra = 0 if self.text() else self.fontMetrics().horizontalAdvance(SETTINGS_BUTTON_TEXT) + 6
        return super().sizeHint().width() + extra

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return QSize(self.iconSize().width() + 24, super().minimumSizeHint().height())

    def set_compact_mode(self, compact: bool) -> None:
        if compact != self.compact_mode:
            self.compact_mode = compact
            self.setText("" if compact else SETTINGS_BUTTON_TEXT)


class HeaderFit(QObject):
    """Keeps the header's title readable: while the other parts' whole forms leave it `TITLE_ROOM`,
    they show whole; otherwise each shows its compact form ("Own prompt", "2,310/4,096", the gear
    alone) and the title has the rest, elided."""

    TITLE_ROOM = 280

    def __init__(self, row: QWidget, parts: list[QWidget]) -> None:
        super().__init__(row)
        self.row, self.parts = row, parts
        row.installEventFilter(self)

    def fit(self) -> None:
        shown = [p for p in self.parts if not p.isHidden()]
        spacing = max(0, self.row.layout().spacing()) if self.row.layout() is not None else 6
        whole = sum(getattr(p, "whole_width", lambda p=p: p.sizeHint().width())() + spacing for p in shown)
        compact = whole + self.TITLE_ROOM > self.row.width()
        for p in shown:
            if hasattr(p, "set_compact_mode"):
                p.set_compact_mode(compact)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if watched is self.row and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            self.fit()
        return super().eventFilter(watched, event)
