"""The chat view: one `MessageView` per message in a scrolling column.

Streaming touches only the last message, and re-renders its Markdown at most every
`RENDER_INTERVAL_MS`, so a long conversation costs no more per token than a short one. Refreshing
from the store updates message views in place (nothing is rebuilt when nothing changed), so the view
neither flickers nor jumps when a reply finishes. The view stays pinned to the bottom while the user
is there; scrolled up, their position is left exactly where it was.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from app.chat.message_view import BOTTOM_SLACK_PX, DEFAULT_EMPTY_TEXT, MessageView, Shown
from app.store import Message


class ChatView(QScrollArea):
    """The messages of one conversation. See the module docstring for how it streams and scrolls."""

    regenerate_requested = Signal(int)
    """(message id): write this reply again, as a new version."""
    delete_requested = Signal(int)
    """(message id): delete this message (the window offers Undo)."""
    edit_requested = Signal(int, str)
    """(message id, new text): the user edited a message and wants the conversation to go on from it."""
    version_requested = Signal(int, int)
    """(message id, step): show another version of a message (and the branch that follows it)."""
    continue_requested = Signal(int)
    """(message id): write more of the last reply."""
    more_sources_requested = Signal(int)
    """(reply id): write it again reading more passages of the library."""
    settings_requested = Signal()
    """The conversation's settings: a reply cut by a full context offers its When too long policy."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Conversation messages")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.viewport().setBackgroundRole(QPalette.ColorRole.Base)
        self._conversation_id: Optional[int] = None
        self._views: list[MessageView] = []
        self._dark = False
        self._busy = False
        self._stick_to_bottom = True
        self.empty_label = QLabel(DEFAULT_EMPTY_TEXT, accessibleName="No messages", wordWrap=True,
                                  alignment=Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        column = QWidget()
        column.setBackgroundRole(QPalette.ColorRole.Base)
        self.column = QVBoxLayout(column)
        self.column.setContentsMargins(12, 12, 12, 12)
        self.column.setSpacing(10)
        self.column.addWidget(self.empty_label, 1)
        self.column.addStretch(0)
        self.setWidget(column)
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range_changed)
        bar.valueChanged.connect(self._on_scrolled)

    @property
    def conversation_id(self) -> Optional[int]:
        """The conversation shown (None: none)."""
        return self._conversation_id

    # -- content -----------------------------------------------------------------------------------
    def set_messages(self, conversation_id: Optional[int], messages: list[Message]) -> None:
        """Show `messages`, updating the existing message views in place; a new conversation
        starts at the bottom, a refresh of the same one keeps the scroll position."""
        if conversation_id != self._conversation_id:
            self._stick_to_bottom = True
        self._conversation_id = conversation_id
        shown = [Shown.of(m) for m in messages]
        for view, s in zip(self._views, shown):
            view.show_message(s)
        self._remove_views_from(len(shown))
        for s in shown[len(self._views):]:
            self._add_view(s)
        self._after_change()

    def clear_for(self, conversation_id: Optional[int]) -> None:
        """Empty the page while `conversation_id`'s messages load (no "Start a conversation" text)."""
        self.set_messages(conversation_id, [])
        self.empty_label.hide()

    def add_pending(self, role: str, text: str, attachments: tuple = ()) -> None:
        """Append a message the store does not hold yet (the user's text and files, the reply's
        placeholder)."""
        self._add_view(Shown(None, role, text, "streaming" if role == "assistant" else "complete",
                             attachments=attachments))
        self._stick_to_bottom = True  # the user just sent: show it
        self._after_change()

    def begin_exchange(self, text: str, attachments: tuple = (), conversation_id: Optional[int] = None) -> None:
        """The user sent `text` (and files): it shows at once with its reply's placeholder under it;
        with `conversation_id`, on that new conversation's empty page."""
        if conversation_id is not None:
            self.set_messages(conversation_id, [])
        self.add_pending("user", text, attachments)
        self.add_pending("assistant", "")

    def begin_regenerate(self, message_id: Optional[int] = None) -> None:
        """A new version of reply `message_id` (None: the last one) starts: it is shown empty at
        once and what followed it goes from the page (the old version and its branch stay in the
        store, reachable through "‹ 1/2")."""
        index = next((i for i, v in enumerate(self._views) if v.shown.id == message_id), None)
        if message_id is not None and index is not None:
            self._remove_views_from(index + 1)
        if self._views and self._views[-1].shown.role == "assistant":
            self._views[-1].replace_message(Shown(None, "assistant", "", "streaming"))
            self._after_change()
        else:  # the last answer never got a row (it failed before one): a placeholder for it
            self.add_pending("assistant", "")

    def begin_edit(self, message_id: int, text: str) -> None:
        """An edited message is sent: it shows its new text at once, what followed it goes (it
        stays in the store, on the other branch), and the reply's placeholder follows."""
        index = next((i for i, v in enumerate(self._views) if v.shown.id == message_id), None)
        if index is None:
            return
        files = self._views[index].shown.attachments  # the new version keeps them
        self._views[index].replace_message(Shown(None, "user", text, "complete", attachments=files))
        self._remove_views_from(index + 1)
        self.add_pending("assistant", "")

    def begin_continue(self) -> None:
        """The last reply is being continued: it streams again where it stopped."""
        if self._views:
            last = self._views[-1]
            last.show_message(replace(last.shown, status="streaming", finish_reason=None))

    def append_to_last(self, text: str, reasoning: str = "") -> None:
        """Streaming: add `text` (and `reasoning`, shown apart) to the last message (only that one
        is ever re-rendered)."""
        if self._views:
            self._views[-1].append(text, reasoning)

    def show_prefill(self, done: int, total: int) -> None:
        """The pending reply's prompt is being read: `done` of `total` tokens so far."""
        if self._views:
            self._views[-1].set_prefill(done, total)

    def set_empty_text(self, html: str) -> None:
        """The friendly text shown when there are no messages."""
        self.empty_label.setText(html)

    def plain_text(self) -> str:
        """What is shown, as "You\\n<text>" blocks joined by a blank line."""
        return "\n\n".join(v.plain_text() for v in self._views)

    def message_views(self) -> list[MessageView]:
        return list(self._views)

    # -- state -------------------------------------------------------------------------------------
    def set_busy(self, busy: bool) -> None:
        """While a reply streams here, Regenerate and Edit are disabled."""
        self._busy = busy
        for v in self._views:
            v.set_busy(busy)

    def set_dark(self, dark: bool) -> None:
        """Re-render code blocks and tables in colors for a dark palette (or back)."""
        self._dark = dark
        for v in self._views:
            v.set_dark(dark)

    def _remove_views_from(self, index: int) -> None:
        focused = QApplication.focusWidget()
        if focused is not None and any(v.isAncestorOf(focused) for v in self._views[index:]):
            # Move the focus first: hiding the focused widget would let Qt pass it on along the
            # tab chain, to the conversation list say, as if the user had gone there.
            self.setFocus(Qt.FocusReason.OtherFocusReason)
        for view in self._views[index:]:
            self.column.removeWidget(view)
            view.hide()
            view.deleteLater()
        del self._views[index:]

    def _add_view(self, shown: Shown) -> None:
        view = MessageView(shown, dark=self._dark)
        view.set_busy(self._busy)
        view.regenerate_clicked.connect(self.regenerate_requested)
        view.delete_clicked.connect(self.delete_requested)
        view.edit_submitted.connect(self.edit_requested)
        view.version_requested.connect(self.version_requested)
        view.continue_clicked.connect(self.continue_requested)
        view.settings_clicked.connect(self.settings_requested)
        view.more_sources_clicked.connect(self.more_sources_requested)
        self.column.insertWidget(self.column.count() - 1, view)
        self._views.append(view)

    def _after_change(self) -> None:
        self.empty_label.setVisible(not self._views)
        self.column.setStretch(self.column.count() - 1, 0 if not self._views else 1)
        for i, v in enumerate(self._views):
            v.set_last_reply(i == len(self._views) - 1)
        if self._stick_to_bottom:
            self._scroll_to_bottom()

    # -- scrolling ---------------------------------------------------------------------------------
    def _scroll_to_bottom(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _on_range_changed(self, _minimum: int, _maximum: int) -> None:
        if self._stick_to_bottom:
            self._scroll_to_bottom()

    def _on_scrolled(self, value: int) -> None:
        self._stick_to_bottom = value >= self.verticalScrollBar().maximum() - BOTTOM_SLACK_PX
