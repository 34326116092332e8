"""The status bar's parts: live figures (conversations held in memory, the app's memory) and the
notices shown beside them, which always fit: elided with the whole text in a tooltip.

Reading the figures costs microseconds (a count the engine keeps, and the process's resident size), so a
slow timer on the GUI thread is enough; nothing here waits on the engine thread.
"""

from __future__ import annotations

from typing import Callable, Optional

import psutil
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QStatusBar, QWidget

from app.window.status_parts import PartLabel
from engine import Capacity, EmbedderMemory, EngineError

REFRESH_MS = 2000


class StatusFigures(PartLabel):
    """"2 of 16 conversations in memory · App memory 1.2 GiB", refreshed every two seconds."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__("", parent)
        self.capacity_source: Optional[Callable[[], Capacity]] = None
        """Returns the engine's current capacity (set once a model is loaded)."""
        self.embedder_memory: Callable[[], Optional[EmbedderMemory]] = lambda: None
        """What the embedding model of conversations' libraries holds (None until it is loaded)."""
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
        parts, short, tip = [], [], []
        c = self._capacity()
        if c is not None:
            parts.append(f"{c.live_sessions} of {c.max_sessions} conversations in memory")
            short.append(f"{c.live_sessions}/{c.max_sessions} in memory")
            tip.append(f"{c.live_sessions} conversations are held in memory, ready to answer at once; "
                       f"there is room for {c.max_sessions}.\nOthers are saved to disk and read back "
                       f"when you open them.\n\nModel weights: {_size(c.weights_bytes)}"
                       f"\nEach conversation: up to {_size(c.bytes_per_session)}"
                       f"\nSet aside for conversations: {_size(c.budget_bytes)}")
        rss = _size(self._process.memory_info().rss)
        parts.append(f"App memory {rss}")
        short.append(rss)
        tip.append("App memory: what Confab uses in all (model, conversations, window)")
        embedder = self.embedder_memory()
        if embedder is not None:
            tip.append(f"Embedding model for libraries: {_size(embedder.total)} (weights {_size(embedder.weights)}, "
                       f"batches up to {_size(embedder.working)}), on its own thread beside the model")
        self.setText(" · ".join(parts), " · ".join(short))
        self.setToolTip("\n".join(tip))


    def _capacity(self) -> Optional[Capacity]:
        """The engine's figures; None without an engine, or once it is closed (the app is quitting
        or a model switch closed it) and answers every call with an error."""
        if self.capacity_source is None:
            return None
        try:
            return self.capacity_source()
        except EngineError:
            return None


class StatusNotices(QObject):
    """Notices in `bar` left of its permanent widgets (the figures): elided to the room there,
    the whole text in the bar's tooltip, re-fitted when the bar is resized.

        notices = StatusNotices(window.statusBar())
        notices.show("Stopped", 3000)      # 0: until replaced or cleared
    """

    def __init__(self, bar: QStatusBar) -> None:
        super().__init__(bar)
        self.bar = bar
        self.text = ""
        """The whole text of the notice shown ("" when none)."""
        self._timer = QTimer(self, singleShot=True)  # ours, so a re-fit keeps the time left
        self._timer.timeout.connect(self.clear)
        bar.messageChanged.connect(self._changed)
        bar.installEventFilter(self)

    def show(self, text: str, timeout_ms: int = 0) -> None:
        self.text = " ".join(text.split())  # one line: a traceback's newlines would hide the rest
        self.bar.showMessage(self._fitted())
        self.bar.setToolTip(self.text)
        if timeout_ms > 0:
            self._timer.start(timeout_ms)
        else:
            self._timer.stop()

    def clear(self) -> None:
        self._timer.stop()
        self.bar.clearMessage()

    def room(self) -> int:
        """Pixels left of the first visible permanent widget (the whole bar before layout)."""
        lefts = [w.x() for w in self.bar.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly)
                 if w.isVisible() and w.x() > 0]
        return (min(lefts) if lefts else self.bar.width()) - 16

    def _fitted(self) -> str:
        if not self.bar.isVisible():
            return self.text
        return self.bar.fontMetrics().elidedText(self.text, Qt.TextElideMode.ElideRight, max(self.room(), 0))

    def _changed(self, message: str) -> None:
        if not message:  # cleared (by us, or by a widget's own status tip)
            self.text = ""
            self._timer.stop()
            self.bar.setToolTip("")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if watched is self.bar and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest) and self.text:
            fitted = self._fitted()
            if fitted != self.bar.currentMessage():
                self.bar.showMessage(fitted)
        return super().eventFilter(watched, event)


def _size(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / (1 << 20):.0f} MiB"
