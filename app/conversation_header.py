"""Pieces of the chat panel's header: the title (shown without Markdown marks) and the badge that
says a conversation has its own system prompt.

    title = TitleLabel("New conversation")
    title.setText("**Plans** for Monday")      # shows "Plans for Monday"; raw_text() keeps the marks
    badge = PromptBadge()
    badge.show_prompt("You are terse.")         # visible, the prompt in its tooltip; "" hides it
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from app.markdown_render import plain_title

SETTINGS_BUTTON_TEXT = "Conversation settings…"
"""The header button's name: not "Settings…", which is the app's (Edit ▸ Settings…)."""
BADGE_TEXT = "System prompt"
TOOLTIP_CHARS = 400


class TitleLabel(QLabel):
    """A conversation title; Markdown a reply or a user put in it (`**bold**`) is not shown raw."""

    def __init__(self, text: str = "", parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
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


class PromptBadge(QLabel):
    """A small rounded tag in the header, shown while the conversation has its own system prompt."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(BADGE_TEXT, parent)
        self.setObjectName("promptBadge")
        self.setAccessibleName("This conversation has its own system prompt")
        self.setStyleSheet("QLabel#promptBadge { border: 1px solid palette(mid); border-radius: 8px;"
                           " padding: 1px 8px; color: palette(text); }")
        self.prompt = ""
        self.hide()

    def show_prompt(self, prompt: str) -> None:
        """Show the badge for a non-empty `prompt` (its start in the tooltip), hide it otherwise."""
        self.prompt = prompt.strip()
        if self.prompt:
            short = self.prompt if len(self.prompt) <= TOOLTIP_CHARS else self.prompt[:TOOLTIP_CHARS - 1] + "…"
            self.setToolTip(f"This conversation's system prompt:\n{short}")
        self.setVisible(bool(self.prompt))
