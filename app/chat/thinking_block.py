"""A reply's reasoning, apart from its answer: a collapsed "Thought for 12 s" line above the answer
that opens to show what the model thought. While the model is still thinking it reads "Thinking…"
and the text grows live (visible when opened).

The Think switch of a conversation (`ThinkSwitch`) sits in the chat header, shown only for models
whose chat template has one (`Engine.thinking_switch`).
"""

from __future__ import annotations

import time
from typing import Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QToolButton, QVBoxLayout, QWidget

from app.chat.labels import thought_label

THINKING = "Thinking…"


class ThinkingBlock(QWidget):
    """The reasoning of one reply, collapsed by default. Hidden for replies without reasoning."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.toggle = QToolButton(checkable=True, autoRaise=True, accessibleName="Show reasoning",
                                  toolTip="Show or hide what the model thought before answering")
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.toggled.connect(self._expand)
        self.text = QLabel(accessibleName="Reasoning", wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.text.setContentsMargins(14, 0, 0, 4)
        self.text.hide()
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addWidget(self.toggle, alignment=Qt.AlignmentFlag.AlignLeft)
        box.addWidget(self.text)
        self.hide()

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def show_reasoning(self, reasoning: str, seconds: Optional[float], thinking: bool) -> None:
        """Show `reasoning`; `thinking`: the model is still at it (no answer yet)."""
        self.setVisible(bool(reasoning) or thinking)
        self.toggle.setText(THINKING if thinking else thought_label(seconds))
        if self.text.text() != reasoning:
            self.text.setText(reasoning)

    def _expand(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.toggle.setAccessibleName("Hide reasoning" if on else "Show reasoning")
        self.text.setVisible(on)


class ThinkingClock:
    """How long a streaming reply has thought, measured where it is shown until the store's
    figure arrives: from its first reasoning to the first text of its answer."""

    def __init__(self) -> None:
        self._since: Optional[float] = None
        self._until: Optional[float] = None

    def saw(self, reasoning: str, text: str) -> None:
        now = time.monotonic()
        if reasoning and self._since is None:
            self._since = now
        if text and self._since is not None and self._until is None:
            self._until = now

    @property
    def seconds(self) -> Optional[float]:
        if self._since is None:
            return None
        return (self._until or time.monotonic()) - self._since


class ThinkSwitch(QToolButton):
    """A conversation's Think switch: on, the model reasons before it answers; off, it answers at
    once (gpt-oss reasons briefly: it cannot stop). Hidden for models without a switch."""

    changed = Signal(bool)
    """The user turned it on or off."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent, text="Think", checkable=True, accessibleName="Think before answering",
                         toolTip="Let the model reason before it answers (this conversation)")
        self.setChecked(True)
        self.clicked.connect(self.changed)
        self.hide()

    def set_supported(self, supported: bool) -> None:
        """The loaded model has a Think switch (else the button is hidden)."""
        self.setVisible(supported)

    def show_state(self, thinking: Optional[bool]) -> None:
        """A conversation's stored switch; None (the model's default) shows as on, as each family
        with a switch thinks by default."""
        self.setChecked(thinking is not False)
