"""The dialog that asks before a tool runs: which tool, from which server, with which arguments;
Allow once / Always for this tool / Deny. Not modal: the window stays usable while it waits."""

from __future__ import annotations

import json
from typing import Optional

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from app.store import ToolCallRecord

ALLOW, ALWAYS, DENY = "allow", "always", "deny"


def pretty_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


class ApprovalDialog(QDialog):
    """Asks about one call; `decided` carries ALLOW, ALWAYS or DENY (closing it denies)."""

    decided = Signal(str)

    def __init__(self, call: ToolCallRecord, description: str = "", parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.call = call
        self._answered = False
        self.setWindowTitle("Run a tool?")
        self.setAccessibleName("Approve tool call")
        box = QVBoxLayout(self)
        ask = QLabel(f"The model wants to run <b>{_html(call.tool)}</b> from the MCP server "
                     f"<b>{_html(call.server)}</b>.", wordWrap=True)
        box.addWidget(ask)
        if description:
            about = QLabel(_html(description), wordWrap=True)
            about.setAccessibleName("What the tool does")
            box.addWidget(about)
        box.addWidget(QLabel("With these arguments:"))
        self.arguments = QPlainTextEdit(pretty_arguments(call.arguments), readOnly=True)
        self.arguments.setAccessibleName("Tool arguments")
        self.arguments.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        lines = min(max(self.arguments.toPlainText().count("\n") + 1, 2), 10)  # as tall as the arguments
        self.arguments.setFixedHeight(self.arguments.fontMetrics().lineSpacing() * lines + 16)
        box.addWidget(self.arguments)
        buttons = QHBoxLayout()
        self.deny_button = QPushButton("Deny")
        self.deny_button.setAccessibleName("Deny tool call")
        self.always_button = QPushButton("Always for this tool")
        self.always_button.setAccessibleName("Always allow this tool")
        self.always_button.setToolTip(f"Run {call.tool} of {call.server} without asking until Confab closes")
        self.allow_button = QPushButton("Allow once")
        self.allow_button.setAccessibleName("Allow tool call once")
        self.allow_button.setDefault(True)
        buttons.addWidget(self.deny_button)
        buttons.addStretch(1)
        buttons.addWidget(self.always_button)
        buttons.addWidget(self.allow_button)
        box.addLayout(buttons)
        self.deny_button.clicked.connect(lambda: self._answer(DENY))
        self.always_button.clicked.connect(lambda: self._answer(ALWAYS))
        self.allow_button.clicked.connect(lambda: self._answer(ALLOW))
        self.resize(460, self.sizeHint().height())

    def _answer(self, decision: str) -> None:
        if not self._answered:
            self._answered = True
            self.decided.emit(decision)
        self.accept() if decision != DENY else self.reject()

    def done(self, result: int) -> None:  # noqa: D401 (Qt name): Esc or the close button deny
        if not self._answered:
            self._answered = True
            self.decided.emit(DENY)
        super().done(result)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
