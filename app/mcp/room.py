"""Puts MCP tools into the main window: the controller, its Tools menu, and the reply hook."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtWidgets import QMainWindow

from app.bridge import Bridge

from .controller import McpController
from .tools_dialog import ToolsDialog

NOTICE_MS = 8000


class McpRoom:
    """`McpRoom(window, bridge, home)`; `close()` before the bridge closes (servers stop)."""

    def __init__(self, window: QMainWindow, bridge: Bridge, home: Path) -> None:
        self.window = window
        self.controller = McpController(bridge, home, window.chat.run_tool_step, window)
        window.chat.reply_finished.connect(self.controller.on_reply_finished)
        self.controller.notice.connect(lambda text: window.notices.show(text, NOTICE_MS))
        self.dialog: Optional[ToolsDialog] = None
        menu = window.menuBar().addMenu("&Tools")
        self.action = menu.addAction("&MCP servers and tools…")
        self.action.triggered.connect(lambda _checked=False: self.open_dialog())

    def open_dialog(self) -> ToolsDialog:
        """The settings page, for the conversation shown (non-modal)."""
        if self.dialog is not None:
            self.dialog.close()
        self.dialog = ToolsDialog(self.controller, self.window.chat.current_id, self.window)
        self.dialog.show()
        return self.dialog

    def close(self) -> None:
        if self.dialog is not None:
            self.dialog.close()
        self.controller.close()
