"""The conversation list's rows: a `QListWidget` that never makes a row current by taking the focus.

Qt's item views make the first row current when they get the keyboard focus with none current
(`QAbstractItemView::focusInEvent`). For Confab the current row is the open conversation, so that
opened the first conversation whenever the focus merely landed on the list: Tab, or Qt moving the
focus there when the focused message's widget went away (Ctrl+N from inside a message). The user
still opens one with the arrow keys or a click.
"""

from __future__ import annotations

from PySide6.QtGui import QFocusEvent
from PySide6.QtWidgets import QListWidget


class ConversationRows(QListWidget):
    """A list whose current row changes only by the user's choice or the program's, never by focus."""

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802 (Qt name)
        if self.currentItem() is not None:
            super().focusInEvent(event)
            return
        blocked = self.blockSignals(True)  # Qt's pick of a first row is no one's choice: say nothing
        try:
            super().focusInEvent(event)
            if self.currentItem() is not None:
                self.setCurrentRow(-1)
        finally:
            self.blockSignals(blocked)
