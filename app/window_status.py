"""Live figures for the status bar: open sessions against capacity, and the app's memory.

Reading them costs microseconds (a count the engine keeps, and the process's resident size), so a
slow timer on the GUI thread is enough; nothing here waits on the engine thread.
"""

from __future__ import annotations

from typing import Callable, Optional

import psutil
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QWidget

from engine import Capacity

REFRESH_MS = 2000


class StatusFigures(QLabel):
    """"Sessions 2 / 16 · Memory 1.2 GiB", refreshed every two seconds."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.capacity_source: Optional[Callable[[], Capacity]] = None
        """Returns the engine's current capacity (set once a model is loaded)."""
        self._process = psutil.Process()
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()
        self.refresh()

    def set_capacity_source(self, source: Optional[Callable[[], Capacity]]) -> None:
        self.capacity_source = source
        self.refresh()

    def refresh(self) -> None:
        parts = []
        tip = []
        if self.capacity_source is not None:
            c = self.capacity_source()
            parts.append(f"Sessions {c.live_sessions} / {c.max_sessions}")
            tip.append(f"Weights: {_size(c.weights_bytes)}\nEach conversation: up to {_size(c.bytes_per_session)}"
                       f"\nBudget for conversations: {_size(c.budget_bytes)}")
        parts.append(f"Memory {_size(self._process.memory_info().rss)}")
        self.setText(" · ".join(parts))
        self.setToolTip("\n".join(tip))


def _size(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / (1 << 20):.0f} MiB"
