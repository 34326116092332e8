"""The chat panel's replies that start from a message already there: regenerate any reply, edit
and resend, continue, a tool step, and moving between versions. Each writes a new version or goes
on in place; nothing stored is deleted (app/store/branches.py keeps every version).

A mixin of `ChatPanel` (app/chat/panel.py), kept apart so the panel stays one screen of setup and
sending; it uses the panel's `bridge`, `chat_view`, `current_id`, `_start` and `_show_messages`.
"""

from __future__ import annotations

from typing import Optional

from app.bridge import Send
from app.conversations.sources import MORE
from app.chat.message_view import Shown
from app.store import Message


class BranchReplies:
    """Replies that restart from a stored message (see the module docstring)."""

    def _can_restart(self) -> bool:
        return self.current_id is not None and self.current_id not in self.bridge.replying()

    def regenerate(self, message_id: Optional[int] = None, passages: Optional[int] = None) -> None:
        """Write a new version of reply `message_id` (None: the last one). The old version is kept
        ("‹ 1/2"), and so is what followed it, as another branch: the page ends at the new reply.
        `passages`: how many passages of the library it may read (None: as a reply does)."""
        if not self._can_restart():
            return
        views = self.chat_view.message_views()
        last = views[-1].shown.id if views else None
        if message_id is None or message_id == last:
            self.chat_view.begin_regenerate()  # the new version shows at once, empty
            self._restart(Send.regenerate(self.bridge, self.current_id, passages=passages))
        else:
            self.chat_view.begin_regenerate(message_id)
            self._restart(Send.regenerate(self.bridge, self.current_id, message_id, passages=passages))

    def more_passages(self, message_id: int) -> None:
        """"More passages" under a reply's sources: a new version of it that reads more of them."""
        self.regenerate(message_id, passages=MORE)

    def edit_and_resend(self, message_id: int, text: str) -> None:
        """Send a new version of one of the user's messages; the conversation continues from it
        (the old version and what followed it are kept, as another branch)."""
        if self._can_restart():
            self.chat_view.begin_edit(message_id, text)
            self._restart(Send.edit(self.bridge, self.current_id, message_id, text))

    def continue_reply(self, message_id: int) -> None:
        """Write more of the last reply (cut by the token limit, stopped or interrupted), in place."""
        if self._can_restart():
            views = self.chat_view.message_views()
            so_far = (views[-1].shown.content, views[-1].shown.reasoning) if views else ("", "")
            self.chat_view.begin_continue()
            self._restart(Send.continue_reply(self.bridge, self.current_id, message_id), *so_far)

    def run_tool_step(self, conversation_id: int, message: Message) -> None:
        """The reply `message` goes on after the results of its tool calls (app/mcp), in place."""
        if conversation_id in self.bridge.replying():
            return
        if conversation_id == self.current_id:
            for view in self.chat_view.message_views():  # its blocks show the results at once
                if view.shown.id == message.id:
                    view.show_message(Shown.of(message))
            self.chat_view.begin_continue()
        self._start(Send.tool_step(self.bridge, conversation_id, message.id), so_far=message.content,
                    thought=message.reasoning)

    def show_version(self, message_id: int, step: int) -> None:
        """Show another version of a message and the branch that follows it."""
        cid = self.current_id
        if cid is None or cid in self.bridge.replying():
            return
        self.bridge.run(lambda store: (store.select_version(message_id, step), store.messages(cid))[1]).success(
            lambda messages: self._show_messages(cid, self.title_label.text(), messages)).failure(self.error.emit)

    def _restart(self, send: Send, so_far: str = "", thought: str = "") -> None:
        """Start `send` (its new version is stored first), then show the branch it is on."""
        cid = send.conversation_id
        self._start(send, so_far=so_far, thought=thought)
        # Queued behind the reply's first step on the store thread: shows the new branch.
        self.bridge.run(lambda store: store.messages(cid)).success(
            lambda messages: self._show_messages(cid, self.title_label.text(), messages))
