"""The one route from background threads into Qt: a lock-protected list of callbacks that a queued
signal drains on the GUI thread (Anki's `taskman` pattern).

    route = GuiRoute()                        # created on the GUI thread
    route.post(label.setText, "done")         # from any thread; runs on the GUI thread, in order
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, Signal

log = logging.getLogger(__name__)


class GuiRoute(QObject):
    """Runs posted callables on the thread that owns this object (the GUI thread), first in first
    out. Safe to post from any thread; a callback that raises is logged and the rest still run."""

    _fire = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._pending: list[Callable[[], Any]] = []
        self._closed = False
        self._fire.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(*args)` for the GUI thread. Dropped silently once the route is closed."""
        with self._lock:
            if self._closed:
                return
            self._pending.append(functools.partial(fn, *args))
        self._fire.emit()

    def close(self) -> None:
        """Drop what is queued and refuse more: the widgets the callbacks touch are going away."""
        with self._lock:
            self._closed = True
            self._pending.clear()

    def _drain(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for fn in pending:
            try:
                fn()
            except Exception:
                log.exception("a callback on the GUI thread failed")
