"""The composer: where the user types. Enter sends, Shift+Enter starts a new line, Esc stops."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget


class Composer(QPlainTextEdit):
    """A plain-text editor that emits `submitted(text)` on Enter and `stop_requested` on Esc."""

    submitted = Signal(str)
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Message")
        self.setAccessibleDescription("Enter sends, Shift+Enter adds a line, Esc stops the reply")
        self.setPlaceholderText("Message (Enter sends, Shift+Enter new line, Esc stops)")
        self.setTabChangesFocus(True)
        self.setMaximumHeight(self.fontMetrics().lineSpacing() * 4 + 16)  # about four lines

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        key, mods = event.key(), event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not mods & Qt.KeyboardModifier.ShiftModifier:
            self.submit()
        elif key == Qt.Key.Key_Escape:
            self.stop_requested.emit()
        else:
            super().keyPressEvent(event)

    def submit(self) -> None:
        """Emit the text (when it is not blank) and clear the editor."""
        text = self.toPlainText().strip()
        if text and self.isEnabled():
            self.clear()
            self.submitted.emit(text)
