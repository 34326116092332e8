"""The notice on a reply the model wrote without seeing the whole conversation (earlier messages
were left out to fit its context, under the conversation's policy): one wrapped line, in the
window, never hidden in a tooltip."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QWidget


class ContextNotice(QLabel):
    """"✂ The conversation was longer than the model's context: …"; hidden when there is none."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Context notice")
        self.setWordWrap(True)  # a long sentence must not widen the window
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.hide()

    def show_notice(self, notice: str) -> None:
        self.setText(f"✂ {notice}" if notice else "")
        self.setVisible(bool(notice))
