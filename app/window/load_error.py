"""The dialog for a model that did not load (or a part of it: the draft model): the whole message,
which may be long (a path, the engine's reasons), in words, with the engine's own text behind
"Show Details…". Window-modal and opened with `open()`, so it never blocks the GUI thread."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from app.error_words import in_words


def load_error_box(parent: QWidget, title: str, message: str, caption: str) -> QMessageBox:
    """The box, not yet shown."""
    box = QMessageBox(QMessageBox.Icon.Warning, caption, title, QMessageBox.StandardButton.Ok, parent)
    words = in_words(message)
    box.setInformativeText(words.sentence)
    if words.details or words.sentence.rstrip(".") != message.rstrip("."):
        box.setDetailedText(words.details or message)  # "Show Details…": the engine's own words
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.setAccessibleName("Model load error")
    return box
