"""The composer: where the user types. Enter sends, Shift+Enter starts a new line, Esc stops.
Files pasted (Ctrl+V) or dropped on it are handed on (`files_given`) to be attached, not typed; so is
a pasted image (`image_given`: a screenshot, an image copied in a browser)."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QImage, QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from app.chat.file_drop import local_files, pasted_image


class Composer(QPlainTextEdit):
    """A plain-text editor that emits `submitted(text)` on Enter and `stop_requested` on Esc."""

    submitted = Signal(str)
    stop_requested = Signal()
    files_given = Signal(list)
    """Local files were pasted or dropped here (paths): attach them."""
    image_given = Signal(QImage)
    """An image was pasted or dropped here: attach it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Message")
        self.setAccessibleDescription("Enter sends, Shift+Enter adds a line, Esc stops the reply")
        self.setPlaceholderText("Message (Enter sends, Shift+Enter new line, Esc stops)")
        self.setTabChangesFocus(True)
        self.setMaximumHeight(self.fontMetrics().lineSpacing() * 4 + 16)  # about four lines
        self.has_files: Callable[[], bool] = lambda: False
        """Files are attached: Enter sends even with no text."""

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
        if (text or self.has_files()) and self.isEnabled():
            self.clear()
            self.submitted.emit(text)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:  # noqa: N802 (Qt name)
        return (bool(local_files(source)) or pasted_image(source) is not None
                or super().canInsertFromMimeData(source))

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 (Qt name)
        """A paste or drop of files, or of an image, attaches them; anything else is inserted as text."""
        files = local_files(source)
        image = pasted_image(source) if not files else None
        if files:
            self.files_given.emit(files)
        elif image is not None:
            self.image_given.emit(image)
        else:
            super().insertFromMimeData(source)
