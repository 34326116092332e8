"""A slim "Deleted “title” — Undo" bar, so a delete can be taken back with one click.

The bar never deletes anything itself: it hands its token back through `undo` (put it back) or
`expired` (the offer went away: timed out, replaced by a newer one, or flushed). It shows one offer
at a time; what the caller does when one expires is its own choice (the window keeps deletes
undoable from Edit ▸ Undo for the session: app/window/deletes.py, whose action owns Ctrl+Z).

The offer never runs out under the user's hand: while the pointer is over the bar (or the Undo
button is held down) the countdown pauses, and it resumes with at least `MIN_AFTER_LEAVE_MS` left,
so an Undo aimed at the bar as it was about to expire still lands.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

MIN_AFTER_LEAVE_MS = 3000
"""Time left, at least, once the pointer leaves the bar (time to come back and click)."""

_IDLE = object()
"""Stands for "no pending token" (None is a valid token)."""


class UndoBar(QFrame):
    """Shows one undoable message at a time; hidden when idle."""

    undo = Signal(object)
    """The user clicked Undo: the token to put back."""
    expired = Signal(object)
    """The message timed out, was replaced or flushed: the token whose action is now final."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self._token: object = _IDLE
        self._text = ""
        self.setAccessibleName("Undo bar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.AlternateBase)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.label = QLabel()
        self.label.setAccessibleName("Undo message")
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setAccessibleName("Undo")
        self.undo_button.setToolTip("Undo (Ctrl+Z)")
        self.undo_button.clicked.connect(self.trigger_undo)
        self.undo_button.pressed.connect(self.pause)
        self.undo_button.released.connect(lambda: None if self.underMouse() else self.resume())
        box = QHBoxLayout(self)
        box.setContentsMargins(8, 2, 4, 2)
        box.addWidget(self.label, stretch=1)
        box.addWidget(self.undo_button)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.flush)
        self.hide()

    def show_message(self, text: str, token: object, timeout_ms: int = 8000) -> None:
        """Show `text` with an Undo button for `timeout_ms`; a pending token expires first."""
        self.flush()
        self._token = token
        self._text = text
        self.setToolTip(text)
        self._elide()
        self.show()
        self.timer.start(max(0, timeout_ms))
        if self.underMouse():
            self.pause()

    def pause(self) -> None:
        """Stop the countdown (the pointer is on the bar); `resume` restarts it."""
        if self.pending():
            self.timer.stop()

    def resume(self) -> None:
        """Restart a paused countdown with `MIN_AFTER_LEAVE_MS` to go."""
        if self.pending() and not self.timer.isActive():
            self.timer.start(MIN_AFTER_LEAVE_MS)

    def enterEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().enterEvent(event)
        self.pause()

    def leaveEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().leaveEvent(event)
        if not self.undo_button.isDown():
            self.resume()

    def pending(self) -> bool:
        """True while a message waits for Undo or its timeout."""
        return self._token is not _IDLE

    def trigger_undo(self) -> None:
        """Hide the bar and hand the pending token back through `undo`."""
        token = self._take()
        if token is not _IDLE:
            self.undo.emit(token)

    def flush(self) -> None:
        """Make the pending action final now (timeout, replacement, or the app closing)."""
        token = self._take()
        if token is not _IDLE:
            self.expired.emit(token)

    def withdraw(self, token: object) -> None:
        """Hide the offer of `token` without a signal (it was undone elsewhere: Edit ▸ Undo)."""
        if self._token is not _IDLE and self._token == token:
            self._take()

    def withdraw_any(self) -> None:
        """Hide whatever offer shows, without a signal (the caller settles it itself)."""
        self._take()

    def _take(self) -> object:
        token, self._token = self._token, _IDLE
        self.timer.stop()
        self.hide()
        return token

    def _elide(self) -> None:
        width = max(0, self.label.width())
        self.label.setText(self.label.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, width)
                           if width > 20 else self._text)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._elide()
