"""Tools where the user types: a Tools button beside the composer, a badge in the header that says
which servers are on (their tools in its tooltip), and a line over the composer when the loaded
model will not call a tool on its own.

The bundled demo model (SmolLM2-135M) never calls a tool unless the reply's first step is made to
(the "must call a tool" rule); a user who turned tools on would otherwise see nothing happen and
not know why, so the window says it in words, with the way to fix it.
"""

from __future__ import annotations

import html
from typing import Callable, Optional

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolButton, QWidget

from app.chat.header import PromptBadge

from .config_edit import set_require_call
from .conversation_tools import ConversationTools

SMALL_MODELS = ("smollm2-135m",)
"""Names (lower case parts) of models that call no tool unless made to: the bundled one."""
NO_SERVERS_TIP = "No MCP servers yet: click to add one (Tools ▸ MCP servers and tools…)"
SMALL_MODEL_HINT = ("{model} does not call tools on its own: turn on <a href='require'>“A reply's first "
                    "step must call a tool”</a>, or load a larger model.")


def calls_tools_unasked(model_name: str) -> bool:
    """False for a model known to call no tool unless its first step is made to."""
    return not any(part in model_name.lower() for part in SMALL_MODELS)


class ToolsBadge(PromptBadge):
    """"Tools: files, search" in the header while servers are on (compact: "Tools: files +1")."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolsBadge")
        self.setAccessibleName("Tools on in this conversation")

        self.servers: list[str] = []
        self.tools_of: Callable[[str], list[str]] = lambda server: []
        """A server's tool names as the hub has them now (read when the tooltip shows)."""

    def show_servers(self, servers: list[str]) -> None:
        """Show the servers on (hidden for none); their tools are in the tooltip."""
        self.servers = list(servers)
        if servers:
            more = f" +{len(servers) - 1}" if len(servers) > 1 else ""
            self.setText(f"Tools: {', '.join(servers)}", f"Tools: {servers[0]}{more}")
            self.setToolTip(self.describe())
        self.setVisible(bool(servers))

    def describe(self) -> str:
        lines = [f"{s}: {', '.join(self.tools_of(s)) or 'not started yet'}" for s in self.servers]
        return "Tools this conversation's replies may call (each call asks you first):\n" + "\n".join(lines)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and self.servers:
            self.setToolTip(self.describe())  # the tools of a server that started since
        return super().event(event)


class ToolsButton(QToolButton):
    """Turns the tools of every configured server on or off for the conversation shown."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent, text="Tools: off", checkable=True, accessibleName="Use tools")
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def show_state(self, active: list[str], configured: list[str]) -> None:
        on = bool(active) and bool(configured)
        self.setChecked(on)
        self.setText("Tools: on" if on else "Tools: off")  # the pressed look alone is easy to miss
        if not configured:
            self.setToolTip(NO_SERVERS_TIP)
        elif active:
            self.setToolTip(f"Tools on: {', '.join(active)}. Click to turn them off for this conversation")
        else:
            self.setToolTip(f"Tools off. Click to let this conversation's replies call the tools of "
                            f"{', '.join(configured)}")


class ToolsControls:
    """The three widgets, kept in step with `ConversationTools` and the loaded model.
    `open_settings` opens Tools ▸ MCP servers and tools…"""

    def __init__(self, tools: ConversationTools, open_settings: Callable[[], object]) -> None:
        self.tools, self.open_settings = tools, open_settings
        self.model = ""
        self.badge = ToolsBadge()
        self.badge.tools_of = lambda server: [t.name for t in tools.controller.hub.tools(server)]
        self.button = ToolsButton()
        self.button.clicked.connect(self._clicked)
        self.hint = QLabel(wordWrap=True, accessibleName="Why tools may not be called")
        self.hint.setTextFormat(Qt.TextFormat.RichText)
        self.hint.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.hint.linkActivated.connect(lambda _link: self._require())
        self.hint.hide()
        tools.changed.connect(self.update)
        self.update()

    def set_model(self, name: str) -> None:
        """The model loaded now (whether it calls tools unasked)."""
        self.model = name
        self.update()

    def update(self) -> None:
        active, configured = self.tools.active(), self.tools.configured()
        self.badge.show_servers(active)
        self.button.show_state(active, configured)
        forced = self.tools.controller.require_call
        lazy = bool(self.model) and not calls_tools_unasked(self.model)
        self.hint.setText(SMALL_MODEL_HINT.format(model=html.escape(self.model)))
        self.hint.setVisible(bool(active) and lazy and not forced)

    def _clicked(self, checked: bool) -> None:
        configured = self.tools.configured()
        if not configured:
            self.button.setChecked(False)
            self.open_settings()
            return
        self.tools.set_used(configured if checked else [])

    def _require(self) -> None:
        """The hint's link: turn the rule on (kept in mcp.json), or say why it could not be."""
        try:
            self.tools.controller.change(lambda home: set_require_call(home, True))
        except (OSError, ValueError) as e:
            self.tools.controller.notice.emit(f"mcp.json was not changed: {e}")
        self.update()
