"""Deleting one message, with Undo: the message leaves the page at once (the turns after it stay),
the undo bar offers it back, and the store makes the deletes final when the app quits
(`Store.purge_deleted`); until then a crash loses nothing.

    deletes = MessageDeletes(window.chat, undo_bar, bridge)   # wires the view's Delete buttons
    deletes.commit_all()                                        # at quit
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction

from app.bridge import Bridge
from app.chat.panel import ChatPanel
from app.store import Message
from app.window.undo_bar import UndoBar

PREVIEW_CHARS = 40
ROLE_WORDS = {"user": "your message", "assistant": "a reply"}


class MessageDeletes(QObject):
    """Deletes the chat view asks for, and their Undo in the bar (tokens `("message", id)`)."""

    changed = Signal(int)
    """A message of this conversation was deleted or brought back (tests wait on it)."""

    def __init__(self, chat: ChatPanel, bar: UndoBar, bridge: Bridge, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.chat, self.bar, self.bridge = chat, bar, bridge
        self.pending: list[int] = []
        """Messages deleted this session, newest last (Undo in the bar takes back the newest)."""
        self.action = QAction("Undo message &delete", self)
        """Edit ▸ Undo message delete: the newest one back, after the bar has gone too."""
        self.action.triggered.connect(lambda _checked=False: self.undo_last())
        self.action.setEnabled(False)
        chat.chat_view.delete_requested.connect(self.delete)
        bar.undo.connect(self._undo)

    def delete(self, message_id: int) -> None:
        """Take the message off the page (refused while this conversation's reply streams)."""
        cid = self.chat.current_id
        if cid is None or cid in self.bridge.replying():
            self.chat.notice.emit("Still replying here: wait, or press Esc to stop, then delete")
            return
        self.bridge.run(lambda store: store.delete_message(message_id)).success(
            lambda m: self._deleted(cid, m)).failure(self.chat.error.emit)

    def undo_last(self) -> None:
        """Bring back the newest message deleted (and still not final)."""
        if self.pending:
            self.bar.withdraw(("message", self.pending[-1]))
            self._undo(("message", self.pending[-1]))

    def _deleted(self, conversation_id: int, message: Message) -> None:
        self.pending.append(message.id)
        self.action.setEnabled(True)
        self.bar.show_message(f"Deleted {describe(message)}", ("message", message.id))
        self._refresh(conversation_id)

    def _undo(self, token: object) -> None:
        if not (isinstance(token, tuple) and len(token) == 2 and token[0] == "message"):
            return  # a conversation's delete (app/window/deletes.py)
        message_id = token[1]
        if message_id in self.pending:
            self.pending.remove(message_id)
        self.action.setEnabled(bool(self.pending))
        self.bridge.run(lambda store: store.restore_message(message_id)).success(
            lambda m: self._refresh(m.conversation_id)).failure(self.chat.error.emit)

    def _refresh(self, conversation_id: int) -> None:
        if conversation_id == self.chat.current_id:
            self.chat.show_conversation(conversation_id, self.chat.title_label.raw_text())
        self.changed.emit(conversation_id)

    def commit_all(self) -> None:
        """Make the deletes final (the app is quitting): queued before the store closes."""
        for message_id in self.pending:
            self.bar.withdraw(("message", message_id))
        self.pending.clear()
        self.action.setEnabled(False)
        self.bridge.run(lambda store: store.purge_deleted())


def describe(message: Message) -> str:
    """"your message “Plans for Mo…”", for the undo bar."""
    text = " ".join(message.content.split())
    text = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"
    what = ROLE_WORDS.get(message.role, "a message")
    return f"{what} “{text}”" if text else what
