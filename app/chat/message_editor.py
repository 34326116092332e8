"""The inline editor of a user message (Edit): its text with Send and Cancel; Ctrl+Enter sends,
Esc cancels. Split from `message_view`, which swaps it in for the message's body."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget


class EditText(QPlainTextEdit):
    """The editor's text box: Ctrl+Enter sends, Esc cancels."""

    send_pressed = Signal()
    cancel_pressed = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        key, mods = event.key(), event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and mods & Qt.KeyboardModifier.ControlModifier:
            self.send_pressed.emit()
        elif key == Qt.Key.Key_Escape:
            self.cancel_pressed.emit()
        else:
            super().keyPressEvent(event)


class EditPanel(QWidget):
    """The inline editor of a user message, with Send and Cancel."""

    sent = Signal(str)
    cancelled = Signal()

    def __init__(self, text: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.text = EditText(text, accessibleName="Edited message", toolTip="Ctrl+Enter sends, Esc cancels")
        lines = max(3, min(12, text.count("\n") + 2))
        self.text.setFixedHeight(self.text.fontMetrics().lineSpacing() * lines + 12)
        self.send_button = QPushButton("Send", accessibleName="Send edited message", toolTip=(
            "Send the edited message; the conversation goes on from here (Ctrl+Enter)"))
        self.send_button.clicked.connect(lambda: self.sent.emit(self.text.toPlainText()))
        cancel = QPushButton("Cancel", accessibleName="Cancel editing", toolTip="Keep the message as it was (Esc)")
        cancel.clicked.connect(self.cancelled)
        self.text.send_pressed.connect(self.send_button.click)
        self.text.cancel_pressed.connect(self.cancelled)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(cancel)
        buttons.addWidget(self.send_button)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.text)
        box.addLayout(buttons)
