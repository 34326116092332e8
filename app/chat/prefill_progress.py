"""What a pending reply shows while the engine reads a long prompt: words and a bar.

A long prompt can take minutes to read on a CPU; the engine reports (read, to read) after each
prefill chunk, and this turns it into "Reading your message… 1,200 / 3,039 tokens" over a bar,
instead of a bare "…" that looks like a hang.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QLabel, QProgressBar, QVBoxLayout, QWidget


def progress_text(done: int, total: int) -> str:
    """ "Reading your message… 1,200 / 3,039 tokens"."""
    return f"Reading your message… {done:,} / {total:,} tokens"


class PrefillProgress(QWidget):
    """Hidden until `set_progress`; hidden again by `clear` (the first token arrived)."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Reading progress")
        self.label = QLabel(accessibleName="Reading progress text")
        self.bar = QProgressBar(accessibleName="Reading progress bar", textVisible=False)
        self.bar.setMaximumHeight(6)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 2, 0, 2)
        box.setSpacing(2)
        box.addWidget(self.label)
        box.addWidget(self.bar)
        self.hide()

    def set_progress(self, done: int, total: int) -> None:
        self.label.setText(progress_text(done, total))
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(min(done, total))
        self.show()

    def clear(self) -> None:
        self.hide()
