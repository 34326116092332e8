"""Settings' draft model row: which small .gguf, if any, guesses tokens for the loaded model.

    row = DraftModelRow(settings.draft_model)
    form.addRow("Draft model:", row)
    row.value()      # "" for none, else the file's path

A draft model is a smaller model of the same family (the same vocabulary) that proposes the next
few tokens; the loaded model checks them in one step, so replies are its own, sooner
(engine/drafts/draft_model.py). It applies to .gguf models on llama.cpp; one that does not fit the
loaded model is skipped at load, and the window says why.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QWidget

from app.file_dialogs import open_file

NONE_TEXT = "None: drafts come from the conversation itself"


class DraftModelRow(QWidget):
    """A read-only path with Choose… and Clear."""

    def __init__(self, source: str, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.path = QLineEdit(source, readOnly=True, placeholderText=NONE_TEXT)
        self.path.setAccessibleName("Draft model")
        self.path.setToolTip("A smaller .gguf of the loaded model's family that guesses its next tokens "
                             "(llama.cpp); the same replies, sooner. Changing it reloads the model.")
        self.path.setMinimumWidth(200)
        self.path.setCursorPosition(0)
        self.choose = QPushButton("C&hoose…")
        self.choose.setAccessibleName("Choose a draft model")
        self.choose.clicked.connect(self._choose)
        self.clear = QPushButton("No&ne")
        self.clear.setAccessibleName("No draft model")
        self.clear.clicked.connect(lambda: self.set_value(""))
        self.clear.setEnabled(bool(source))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.path, 1)
        row.addWidget(self.choose)
        row.addWidget(self.clear)

    def value(self) -> str:
        return self.path.text()

    def set_value(self, source: str) -> None:
        self.path.setText(source)
        self.path.setCursorPosition(0)
        self.path.setToolTip(source or NONE_TEXT)
        self.clear.setEnabled(bool(source))

    def _choose(self) -> None:
        chosen = open_file(self, "Choose a draft model", "GGUF models (*.gguf)")
        if chosen is not None:
            self.set_value(str(chosen))
