"""Deleted conversations the user can still take back, for the whole session.

A delete hides the conversation at once and shows the undo bar; the bar going away (after a few
seconds) does not make the delete final: Edit ▸ Undo (Ctrl+Z) still brings back the last ones,
newest first. The store deletes them when the app quits (or, past `UNDO_DEPTH`, the oldest one when
another is deleted). Until then the rows stay in the store, so a crash loses nothing: the
conversation is back at the next start.

    deletes = DeleteUndo(undo_bar, commit=lambda cid: bridge.run(lambda s: s.delete_conversation(cid)))
    edit_menu.addAction(deletes.action)
    deletes.delete(cid, "Plans")        # hidden; the bar offers Undo
    deletes.restored.connect(show_again)
    deletes.commit_all()                # at quit
"""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence

from app.window.undo_bar import UndoBar

UNDO_DEPTH = 20
"""Deletes that stay undoable; a delete past this many makes the oldest final."""
UNTITLED = "New conversation"


class DeleteUndo(QObject):
    """The stack of deletes not yet made final, the Undo action and the bar that offers it."""

    restored = Signal(int)
    """A delete was undone: the conversation to show again."""

    def __init__(self, bar: UndoBar, commit: Callable[[int], None], parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.bar = bar
        self._commit = commit
        self._stack: list[tuple[int, str]] = []  # (conversation id, title), newest last
        self.action = QAction("&Undo delete", self)
        self.action.setShortcut(QKeySequence.StandardKey.Undo)  # a focused text field keeps its own
        self.action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.action.triggered.connect(lambda _checked=False: self.undo_last())
        bar.undo.connect(self.undo)
        self._update()

    def pending(self) -> set[int]:
        """Conversations deleted but not yet final (hidden from the list and search)."""
        return {cid for cid, _ in self._stack}

    def delete(self, conversation_id: int, title: str) -> None:
        """Hide `conversation_id` (the caller refreshes the list) and offer Undo."""
        self._stack = [(c, t) for c, t in self._stack if c != conversation_id]
        self._stack.append((conversation_id, title or UNTITLED))
        while len(self._stack) > UNDO_DEPTH:
            self._commit(self._stack.pop(0)[0])
        self.bar.show_message(f"Deleted “{title or UNTITLED}”", conversation_id)
        self._update()

    def undo_last(self) -> None:
        """Edit ▸ Undo: bring back the newest delete."""
        if self._stack:
            self.undo(self._stack[-1][0])

    def undo(self, conversation_id: int) -> None:
        """Bring `conversation_id` back (from the bar's button or the menu)."""
        if conversation_id not in self.pending():
            return
        self._stack = [(c, t) for c, t in self._stack if c != conversation_id]
        self.bar.withdraw(conversation_id)
        self._update()
        self.restored.emit(conversation_id)

    def commit_all(self) -> None:
        """Make every pending delete final (the app is quitting)."""
        self.bar.withdraw_any()
        stack, self._stack = self._stack, []
        for conversation_id, _ in stack:
            self._commit(conversation_id)
        self._update()

    def _update(self) -> None:
        if self._stack:
            self.action.setText(f"&Undo delete “{self._stack[-1][1].replace('&', '&&')}”")
        else:
            self.action.setText("&Undo delete")
        self.action.setEnabled(bool(self._stack))
