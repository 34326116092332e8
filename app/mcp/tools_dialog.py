"""Tools ▸ MCP servers and tools…: the servers of `mcp.json` (add, remove), which ones the shown
conversation uses, each server's tools and log, and the limits (tool steps per reply, call timeout).
The file is read again when the dialog opens and before each change, and every change is written
into it at once, in place (`config_edit`): servers and keys the user wrote there stay."""

from __future__ import annotations

import shlex
from typing import Callable, Optional

from PySide6.QtCore import QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QListWidget, QMessageBox, QPlainTextEdit, QPushButton, QSizePolicy, QSpinBox,
                               QVBoxLayout, QWidget)

from .config import ConfigError, ServerConfig, parse_server
from .config_edit import add_server, check_writable, remove_server, set_limits, set_require_call
from .controller import McpController
from .conversation_tools import ConversationTools

REFRESH_MS = 1000


class ToolsDialog(QDialog):
    """Edits the controller's config; `conversation_id` is the conversation shown (None: none)."""

    def __init__(self, controller: McpController, conversation_id: Optional[int],
                 parent: Optional[QWidget] = None, tools: Optional[ConversationTools] = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.conversation_id = conversation_id
        self.choice = tools
        """The window's choice of servers: a new page's is made here; a stored conversation's is
        stored, then the window's Tools button and badge are told. None: a stored conversation's only."""
        self.used: set[str] = set(tools.new_page) if tools is not None and conversation_id is None else set()
        controller.reload()  # the user may have written mcp.json since the app read it
        self.setWindowTitle("MCP servers and tools")
        self.setAccessibleName("MCP servers and tools")
        self.servers = QListWidget(accessibleName="MCP servers")
        self.servers.currentRowChanged.connect(lambda _row: self.show_server())
        self.add_button = QPushButton("Add…", accessibleName="Add MCP server")
        self.add_button.clicked.connect(self.add_server)
        self.remove_button = QPushButton("Remove", accessibleName="Remove MCP server")
        self.remove_button.clicked.connect(self.remove_server)
        self.restart_button = QPushButton("Restart", accessibleName="Restart MCP server")
        self.restart_button.clicked.connect(self.restart_server)
        self.use_box = QCheckBox("Use in this conversation" if conversation_id is not None or tools is None
                                 else "Use in the new conversation", accessibleName="Use this server in this conversation")
        self.use_box.toggled.connect(self.set_used)
        self.about = QLabel(wordWrap=True, accessibleName="Server command or address")
        self.about.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # a long path wraps
        self.tools = QListWidget(accessibleName="Tools of the server")
        self.log = QPlainTextEdit(readOnly=True, accessibleName="Server log")
        self.log.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setup_limits()
        self.setup_layout()
        self.refresh()
        self._timer = QTimer(self, interval=REFRESH_MS)  # status and log of starting servers
        self._timer.timeout.connect(self.show_server)
        self._timer.start()
        if tools is not None and conversation_id is None:
            tools.changed.connect(lambda: self._got_used(tools.new_page) if tools.conversation_id is None else None)
        elif conversation_id is not None:
            controller.bridge.run(lambda store: store.conversation_servers(conversation_id)).success(self._got_used)

    def setup_limits(self) -> None:
        config = self.controller.config
        self.step_limit = QSpinBox(accessibleName="Tool steps per reply", minimum=1, maximum=100,
                                   value=config.step_limit)
        self.step_limit.setToolTip("How many rounds of tool calls one reply may make before it must answer")
        self.timeout = QDoubleSpinBox(accessibleName="Tool call timeout", minimum=1, maximum=3600, decimals=0,
                                      suffix=" s", value=config.timeout_s)
        self.timeout.setToolTip("A call that takes longer is given up as hung (and its server stopped)")
        self.require = QCheckBox("A reply's first step must call a tool", checked=self.controller.require_call,
                                 accessibleName="Require a tool call")
        for widget in (self.step_limit, self.timeout):
            widget.editingFinished.connect(self.save_limits)
        self.require.setToolTip("Small models (the bundled one among them) call no tool unless made to; "
                                "kept in mcp.json, so it stays on after a restart")
        self.require.toggled.connect(lambda on: self._save(lambda home: set_require_call(home, on)))

    def setup_layout(self) -> None:
        left = QVBoxLayout()
        left.addWidget(self.servers, 1)
        row = QHBoxLayout()
        row.addWidget(self.add_button)
        row.addWidget(self.remove_button)
        left.addLayout(row)
        right = QVBoxLayout()
        right.addWidget(self.about)
        top = QHBoxLayout()
        top.addWidget(self.use_box, 1)
        top.addWidget(self.restart_button)
        right.addLayout(top)
        right.addWidget(QLabel("Tools:"))
        right.addWidget(self.tools, 1)
        right.addWidget(QLabel("Log:"))
        right.addWidget(self.log, 1)
        columns = QHBoxLayout()
        columns.addLayout(left, 1)
        columns.addLayout(right, 2)
        limits = QFormLayout()
        limits.addRow("Tool &steps per reply:", self.step_limit)
        limits.addRow("Call &timeout:", self.timeout)
        limits.addRow(self.require)
        self.error_label = QLabel(wordWrap=True, accessibleName="mcp.json problem")
        self.error_label.setStyleSheet("color: #b00020;")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        where = QLabel(f"Servers are kept in {self.controller.home / 'mcp.json'} (Cursor's format). "
                       "Every call asks you first.", wordWrap=True)
        where.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        box.addWidget(where)
        box.addWidget(self.error_label)
        box.addLayout(columns, 1)
        box.addLayout(limits)
        box.addWidget(buttons)
        self.resize(760, 560)

    # -- showing -----------------------------------------------------------------------------------
    def refresh(self) -> None:
        row = self.servers.currentRow()
        self.servers.clear()
        for s in self.controller.config.servers:
            self.servers.addItem(s.name)
        self.servers.setCurrentRow(min(max(row, 0), self.servers.count() - 1))
        self.require.blockSignals(True)  # as the file says (a refused change goes back)
        self.require.setChecked(self.controller.require_call)
        self.require.blockSignals(False)
        self.error_label.setText(self.controller.config_error)
        self.error_label.setVisible(bool(self.controller.config_error))
        self.show_server()

    def current(self) -> Optional[ServerConfig]:
        item = self.servers.currentItem()
        return self.controller.config.server(item.text()) if item is not None else None

    def show_server(self) -> None:
        server = self.current()
        for w in (self.remove_button, self.restart_button, self.use_box):
            w.setEnabled(server is not None)
        can_use = self.conversation_id is not None or self.choice is not None
        self.use_box.setEnabled(server is not None and can_use)
        self.use_box.setToolTip("" if can_use else "Open a conversation to choose the servers it uses")
        if server is None:
            self.about.setText("No MCP servers yet: Add… one, or put an mcp.json in the data folder.")
            self.tools.clear()
            self.log.clear()
            return
        hub = self.controller.hub
        status = hub.status(server.name) or "not started"
        self.about.setText(f"{server.transport}: {server.describe()}\nStatus: {status}")
        names = [f"{t.name} — {t.description.splitlines()[0] if t.description else ''}" for t in hub.tools(server.name)]
        if names != [self.tools.item(i).text() for i in range(self.tools.count())]:
            self.tools.clear()
            self.tools.addItems(names)
        log = hub.log_text(server.name)
        if log != self.log.toPlainText():
            self.log.setPlainText(log)
            self.log.verticalScrollBar().setValue(self.log.verticalScrollBar().maximum())
        self.use_box.blockSignals(True)
        self.use_box.setChecked(server.name in self.used)
        self.use_box.blockSignals(False)

    def _got_used(self, names: list[str]) -> None:
        self.used = set(names)
        self.show_server()

    # -- changes -----------------------------------------------------------------------------------
    def set_used(self, on: bool) -> None:
        server, cid = self.current(), self.conversation_id
        if server is None:
            return
        names = sorted(self.used | {server.name} if on else self.used - {server.name})
        if cid is None:
            if self.choice is not None:
                self.choice.set_new_page(names)
            return
        self.controller.bridge.run(lambda store: store.set_conversation_servers(cid, names)).success(
            lambda stored: (self._got_used(stored), self.choice.show(cid) if self.choice is not None else None))

    def add_server(self) -> None:
        """Refused at once, with the reason, while mcp.json cannot be changed (it does not parse)."""
        self.controller.reload()
        try:
            check_writable(self.controller.home)
        except (OSError, ConfigError) as e:
            self._refused(e)
            return
        self.refresh()
        dialog = AddServerDialog(lambda name: self.controller.config.server(name) is not None, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            server = dialog.server
            if self._save(lambda home: add_server(home, server)):
                names = [self.servers.item(i).text() for i in range(self.servers.count())]
                self.servers.setCurrentRow(names.index(server.name) if server.name in names else -1)

    def remove_server(self) -> None:
        server = self.current()
        if server is not None:
            self._save(lambda home: remove_server(home, server.name))

    def restart_server(self) -> None:
        server = self.current()
        if server is not None:
            hub = self.controller.hub
            hub.stop(server.name).add_done_callback(lambda _f: hub.connect(server.name))

    def save_limits(self) -> None:
        steps, timeout = self.step_limit.value(), float(self.timeout.value())
        self._save(lambda home: set_limits(home, steps, timeout))

    def _save(self, edit: Callable) -> bool:
        """Apply `edit` to the file as it is now; False (and why, in words) when nothing was written."""
        try:
            self.controller.change(edit)
        except (OSError, ConfigError) as e:
            self._refused(e)
            return False
        self.refresh()
        return True

    def _refused(self, error: BaseException) -> None:
        self.refresh()
        self.error_label.setText(f"mcp.json was not changed: {error}")
        self.error_label.show()
        QMessageBox.warning(self, "MCP servers", f"mcp.json was not changed: {error}")


class AddServerDialog(QDialog):
    """Name, a command line (stdio) or a URL (streamable HTTP), and its environment or headers."""

    def __init__(self, taken: Callable[[str], bool], parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add an MCP server")
        self.taken = taken
        self.server: Optional[ServerConfig] = None
        self.name = QLineEdit(accessibleName="Server name", placeholderText="files")
        self.target = QLineEdit(accessibleName="Command or URL",
                                placeholderText="npx -y @modelcontextprotocol/server-filesystem ~/notes   or   https://…/mcp")
        self.extra = QPlainTextEdit(accessibleName="Environment or headers")
        self.extra.setPlaceholderText("NAME=value, one a line: environment of a command, headers of a URL")
        self.extra.setMaximumHeight(90)
        self.error = QLabel(wordWrap=True, accessibleName="What is wrong")
        self.error.setStyleSheet("color: #b00020;")
        form = QFormLayout(self)
        form.addRow("&Name:", self.name)
        form.addRow("&Command or URL:", self.target)
        form.addRow("&Environment / headers:", self.extra)
        form.addRow(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.resize(560, self.sizeHint().height())

    def accept(self) -> None:
        try:
            self.server = self.read()
        except (ConfigError, ValueError) as e:
            self.error.setText(str(e))
            return
        super().accept()

    def read(self) -> ServerConfig:
        name, target = self.name.text().strip(), self.target.text().strip()
        if self.taken(name):
            raise ConfigError(f"There is a server named {name!r} already")
        pairs = {}
        for line in self.extra.toPlainText().splitlines():
            if line.strip():
                key, sep, value = line.partition("=")
                if not sep or not key.strip():
                    raise ConfigError(f"Write each environment variable or header as NAME=value, not {line!r}")
                pairs[key.strip()] = value.strip()
        if target.startswith(("http://", "https://")):
            return parse_server(name, {"url": target, "headers": pairs})
        words = shlex.split(target)
        if not words:
            raise ConfigError("Give the command that starts the server, or its URL")
        return parse_server(name, {"command": words[0], "args": words[1:], "env": pairs})
