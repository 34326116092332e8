"""Which MCP servers the conversation shown uses, in one place for the composer's Tools button,
the header's badge and the settings page (`ToolsDialog`), so all three always agree.

On a new page there is no conversation yet: the choice is kept here and given to the conversation
its first message creates, in the job that creates it, before its reply asks for tools; so tools
can be on for a first message. It stays the choice of the next new pages too (as the Think switch
does), until the user changes it.
"""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import QObject, Signal

from app.bridge import Bridge
from app.chat.panel import ChatPanel
from app.store import Store

from .controller import McpController


class ConversationTools(QObject):
    """`used`: the shown conversation's servers (on a new page, those its first message gets)."""

    changed = Signal()
    """`used` changed, or the page did, or mcp.json was read again."""

    def __init__(self, bridge: Bridge, controller: McpController, chat: ChatPanel) -> None:
        super().__init__(chat)
        self.bridge, self.controller = bridge, controller
        self.conversation_id: Optional[int] = chat.current_id
        self.used: list[str] = []
        self.new_page: list[str] = []
        """The servers a conversation created by a first message starts with."""
        chat.page_changed.connect(self.show)
        chat.on_create.append(self._for_created)
        controller.reloaded.connect(self.changed)

    def active(self) -> list[str]:
        """The used servers that mcp.json still has (a removed one offers nothing)."""
        return [n for n in self.used if self.controller.config.server(n) is not None]

    def configured(self) -> list[str]:
        return [s.name for s in self.controller.config.servers]

    def show(self, conversation_id: Optional[int]) -> None:
        """The page shows `conversation_id` now (None: a new page)."""
        self.conversation_id = conversation_id
        if conversation_id is None:
            self._got(None, self.new_page)
            return
        self.bridge.run(lambda store: store.conversation_servers(conversation_id)).success(
            lambda names: self._got(conversation_id, names))

    def set_used(self, names: list[str]) -> None:
        """Use these servers in the conversation shown (stored), or in the next one created."""
        names, cid = sorted(set(names)), self.conversation_id
        if cid is None:
            self.set_new_page(names)
            return
        self.bridge.run(lambda store: store.set_conversation_servers(cid, names)).success(
            lambda stored: self._got(cid, stored))

    def set_new_page(self, names: list[str]) -> None:
        """The servers the next conversation created by a first message starts with."""
        self.new_page = sorted(set(names))
        if self.conversation_id is None:
            self._got(None, self.new_page)

    def _got(self, conversation_id: Optional[int], names: list[str]) -> None:
        if conversation_id == self.conversation_id:
            self.used = list(names)
            self.changed.emit()

    def _for_created(self) -> Callable[[Store, int], object]:
        names = list(self.new_page)
        return lambda store, cid: store.set_conversation_servers(cid, names) if names else None
