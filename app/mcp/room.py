"""Puts MCP tools into the main window: the controller, its Tools menu, the reply hook, and the
tools controls where the user types (a Tools button, the header's badge, the small-model line)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtWidgets import QMainWindow

from app.bridge import Bridge

from .controller import McpController
from .conversation_tools import ConversationTools
from .tools_controls import ToolsControls
from .tools_dialog import ToolsDialog

NOTICE_MS = 8000


class McpRoom:
    """`McpRoom(window, bridge, home)`; `close()` before the bridge closes (servers stop)."""

    def __init__(self, window: QMainWindow, bridge: Bridge, home: Path) -> None:
        self.window = window
        self.controller = McpController(bridge, home, window.chat.run_tool_step, window)
        window.chat.reply_finished.connect(self.controller.on_reply_finished)
        self.tools = ConversationTools(bridge, self.controller, window.chat)
        """Which servers the conversation shown (or the next one created) uses."""
        self.controls = ToolsControls(self.tools, self.open_dialog)
        window.chat.add_parts(self.controls.badge, self.controls.button, self.controls.hint)
        self.tools.show(window.chat.current_id)
        self.controller.notice.connect(lambda text: window.notices.show(text, NOTICE_MS))
        self.dialog: Optional[ToolsDialog] = None
        menu = window.menuBar().addMenu("&Tools")
        self.action = menu.addAction("&MCP servers and tools…")
        self.action.triggered.connect(lambda _checked=False: self.open_dialog())

    def open_dialog(self) -> ToolsDialog:
        """The settings page, for the conversation shown (non-modal)."""
        if self.dialog is not None:
            self.dialog.close()
        self.dialog = ToolsDialog(self.controller, self.window.chat.current_id, self.window, self.tools)
        self.dialog.show()
        return self.dialog

    def set_model(self, name: str) -> None:
        """The model loaded now: a small one that calls no tool unless made to is named over the composer."""
        self.controls.set_model(name)

    def close(self) -> None:
        if self.dialog is not None:
            self.dialog.close()
        self.controller.close()
