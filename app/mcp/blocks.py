"""A reply's tool calls in the conversation: one collapsible block per call, under the reply's
header. Collapsed it shows the tool, its server and how the call ended; open, the arguments and
the result as the model was sent them."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QPalette
from PySide6.QtWidgets import QFrame, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from app.store import ToolCallRecord

from .approval import pretty_arguments

STATUS_WORDS = {"pending": "waiting for you", "done": "done", "denied": "denied", "failed": "failed"}
MAX_SHOWN_CHARS = 4000
"""A longer result shows its start in the block (the model was sent all of it; export has it)."""


class ToolBlock(QFrame):
    """One call: a header button that opens and closes the details below it."""

    def __init__(self, call: ToolCallRecord, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.call = call
        self.setObjectName("toolBlock")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        box = QVBoxLayout(self)
        box.setContentsMargins(6, 2, 6, 2)
        box.setSpacing(2)
        self.header = QToolButton(checkable=True, autoRaise=True)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.setAccessibleName(f"Tool call {call.tool}")
        self.header.toggled.connect(self.set_open)
        box.addWidget(self.header)
        self.details = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setAccessibleName(f"Arguments and result of {call.tool}")
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # wraps, never widens
        box.addWidget(self.details)
        self.show_call(call)
        self.set_open(False)

    def show_call(self, call: ToolCallRecord) -> None:
        self.call = call
        word = STATUS_WORDS.get(call.status, call.status)
        self.header.setText(f"Tool {call.tool} · {call.server} · {word}")
        self.header.setToolTip(f"{call.tool} from the MCP server {call.server}: {word}. Click to "
                               f"{'hide' if self.header.isChecked() else 'show'} its arguments and result.")
        result = call.result if len(call.result) <= MAX_SHOWN_CHARS else (
            call.result[:MAX_SHOWN_CHARS] + f"\n… ({len(call.result) - MAX_SHOWN_CHARS:,} more characters)")
        self.details.setText(f"Arguments:\n{pretty_arguments(call.arguments)}\n\n"
                             f"Result:\n{result if call.status != 'pending' else '(not run yet)'}")
        if call.status == "failed":
            self.header.setForegroundRole(QPalette.ColorRole.BrightText)

    def set_open(self, opened: bool) -> None:
        self.header.setArrowType(Qt.ArrowType.DownArrow if opened else Qt.ArrowType.RightArrow)
        if self.header.isChecked() != opened:
            self.header.setChecked(opened)
        self.details.setVisible(opened)

    @property
    def is_open(self) -> bool:
        return self.details.isVisibleTo(self)


class ToolBlocks(QWidget):
    """The blocks of one message's calls (hidden when it made none); updated in place."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Tool calls")
        self.blocks: list[ToolBlock] = []
        self._box = QVBoxLayout(self)
        self._box.setContentsMargins(0, 2, 0, 2)
        self._box.setSpacing(4)
        self.hide()

    def show_calls(self, calls: tuple[ToolCallRecord, ...]) -> None:
        for block, call in zip(self.blocks, calls):
            if block.call != call:
                block.show_call(call)
        for block in self.blocks[len(calls):]:
            self._box.removeWidget(block)
            block.deleteLater()
        del self.blocks[len(calls):]
        for call in calls[len(self.blocks):]:
            block = ToolBlock(call)
            self._box.addWidget(block)
            self.blocks.append(block)
        self.setVisible(bool(calls))
