"""The status bar's permanent parts, each set apart by a thin line, and the words for the backend a
model runs on ("PyTorch on CPU · float32", "llama.cpp on CPU", "MLX on Apple GPU").

    bar.addPermanentWidget(StatusPart(label))       # a line, then the label; hidden while it is empty
    api = LinkPartLabel(); api.clicked.connect(show_server_view)   # a part that opens a window
    backend_text("torch", "cpu", "float32")         # "PyTorch on CPU · float32"
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QStatusBar, QWidget

from app.fitting import ElidedLabel

BACKEND_NAMES = {"torch": "PyTorch", "mlx": "MLX", "llamacpp": "llama.cpp", "remote": "Remote server"}
"""How each engine backend is named to the user; an unknown one is shown as the engine names it."""
DEVICE_NAMES = {"cpu": "CPU", "cuda": "NVIDIA GPU (CUDA)", "mps": "Apple GPU (MPS)", "metal": "Apple GPU",
                "gpu": "GPU", "vulkan": "GPU (Vulkan)"}
SHORT_DEVICES = {"cuda": "CUDA", "mps": "MPS", "metal": "Metal", "vulkan": "Vulkan"}


def backend_name(backend: str) -> str:
    return BACKEND_NAMES.get(backend, backend)


def backend_text(backend: str, device: str, precision: str = "", placement: str = "") -> str:
    """One line naming what runs the model: "PyTorch on CPU · float32 · 4-bit weights", "llama.cpp on
    NVIDIA GPU (CUDA) · RTX 4070 · 31/31 layers · Q4_K"; a remote server is named by its address
    ("Remote server at 127.0.0.1:8317")."""
    if backend == "remote":
        return f"{backend_name(backend)} at {device}"
    where = f"{backend_name(backend)} on {DEVICE_NAMES.get(device, device)}"
    return where + "".join(f" · {part}" for part in (placement, precision) if part)


def backend_compact(backend: str, device: str) -> str:
    """The backend part's compact form: "llama.cpp · CPU", "Remote · 127.0.0.1:8799"."""
    if backend == "remote":
        return f"Remote · {re.sub(r'^https?://|/v1/?$', '', device)}"
    return f"{backend_name(backend)} · {SHORT_DEVICES.get(device, DEVICE_NAMES.get(device, device))}"


def backend_tip(backend: str, device: str, precision_reason: str = "", backend_reason: str = "") -> str:
    """The backend part's tooltip: which library, why it was chosen, the device and the precision."""
    lines = [f"Backend: {backend_name(backend)} ({backend})"]
    if backend_reason:
        lines.append(f"Why: {backend_reason}")
    lines.append(f"{'Server' if backend == 'remote' else 'Device'}: {device}")
    if precision_reason:
        lines.append(f"Precision: {precision_reason}")
    return "\n".join(lines)


class StatusPart(QWidget):
    """A thin vertical line, then `label`: the status bar's parts never run together. The part
    hides while its label is empty (a `PartLabel` says when)."""

    def __init__(self, label: QLabel, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.label = label
        line = QFrame(frameShape=QFrame.Shape.VLine, frameShadow=QFrame.Shadow.Sunken)
        box = QHBoxLayout(self)
        box.setContentsMargins(4, 0, 4, 0)
        box.setSpacing(8)
        box.addWidget(line)
        box.addWidget(label)
        if isinstance(label, PartLabel):
            label.part = self
            self.setVisible(bool(label.text()))


class PartLabel(ElidedLabel):
    """A status label whose `StatusPart` shows only while it has text. It has a whole form and a
    compact one (`setText(text, compact)`, or made by `shorten`): `StatusParts` picks the compact
    forms when the whole ones do not fit the bar, and what still does not fit is elided
    ("PyTorch on CPU · bflo…"), never clipped mid-letter; `text()` is always the whole text."""

    part: Optional[StatusPart] = None
    priority = 0
    """How useful the part is (higher: kept whole longer when the bar is short of room)."""
    MIN_WIDTH = 60
    """Narrowest it gets before the status bar runs out of room."""

    def __init__(self, text: str = "", parent: Optional[QWidget] = None,
                 shorten: Optional[Callable[[str], str]] = None) -> None:
        self.shorten = shorten
        """Makes the compact form of a text set without one (None: the whole text is compact)."""
        super().__init__(text, parent, min_width=self.MIN_WIDTH)

    def setText(self, text: str, compact: str = "") -> None:  # noqa: N802 (Qt name)
        if not compact and self.shorten is not None:
            compact = self.shorten(text)
        super().setText(text, compact)
        if self.part is not None:
            self.part.setVisible(bool(text))


class LinkPartLabel(PartLabel):
    """A part that opens something when clicked (the local API's part opens the Server view)."""

    clicked = Signal()

    def __init__(self, text: str = "", parent: Optional[QWidget] = None) -> None:
        super().__init__(text, parent)
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt name)
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(event.position().toPoint()):
            self.clicked.emit()
        super().mouseReleaseEvent(event)


class StatusParts(QObject):
    """Keeps `bar`'s parts whole: while all their whole texts fit (leaving `NOTICE_ROOM` for the
    notices), each shows its whole text; otherwise every part shows its compact form (the details
    are in its tooltip). When even the compact forms do not fit, the least useful parts (lowest
    `priority`) give up their room first, down to `MIN_WIDTH` each, so "20.2 tok/s" and the model's
    name stay readable rather than every part being cut a little. Re-decided when the bar is
    resized or a part's text changes."""

    NOTICE_ROOM = 200
    """Pixels kept for the notices ("Model ready", errors) left of the parts."""
    SHORT_NOTICE_ROOM = 80
    """Kept for the notices when even the compact parts do not fit (a notice is elided, and passes)."""

    def __init__(self, bar: QStatusBar) -> None:
        super().__init__(bar)
        self.bar = bar
        bar.installEventFilter(self)

    def labels(self) -> list[PartLabel]:
        return [p.label for p in self.bar.findChildren(StatusPart)
                if isinstance(p.label, PartLabel) and p.label.text()]

    def fit(self) -> None:
        labels = self.labels()
        whole = sum(label.whole_width() + PART_EXTRA for label in labels)
        compact = whole > self.bar.width() - self.NOTICE_ROOM
        for label in labels:
            label.set_compact_mode(compact)
        room = self.bar.width() - self.SHORT_NOTICE_ROOM - PART_EXTRA * len(labels)
        for label, width in zip(labels, share(room, [(lb.priority, lb.sizeHint().width()) for lb in labels])):
            label.setMaximumWidth(width)


    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt name)
        if watched is self.bar and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            self.fit()
        return super().eventFilter(watched, event)


def share(room: int, wants: list[tuple[int, int]]) -> list[int]:
    """Widths for parts that want (priority, width) in `room` pixels: the most useful first get
    what they want, each leaving `PartLabel.MIN_WIDTH` for every part after it; a part that gets
    all it wants is not capped (QWIDGETSIZE_MAX)."""
    order = sorted(range(len(wants)), key=lambda i: -wants[i][0])
    widths = [UNCAPPED] * len(wants)
    left = room
    for n, i in enumerate(order):
        later = (len(order) - n - 1) * PartLabel.MIN_WIDTH
        width = max(PartLabel.MIN_WIDTH, min(wants[i][1], left - later))
        if width < wants[i][1]:
            widths[i] = width
        left -= width
    return widths


UNCAPPED = 16777215
"""Qt's QWIDGETSIZE_MAX: no maximum width."""
PART_EXTRA = 4 + 4 + 8 + 2 + 6
"""A part's width beyond its label: margins, the line and the space after it, the bar's spacing."""


def short_address(text: str) -> str:
    """The compact form of a text naming a server: its URL down to the port ("API :8317")."""
    return re.sub(r"(?:https?://)?[\w.\-\[\]]+:(\d+)(?:/\S*)?", r":\1", text).replace(": :", " :")


def short_model(name: str) -> str:
    """A model's compact name: no "bundled:" prefix, a path's last part."""
    name = name.removeprefix("bundled:")
    return name.rstrip("/\\").rsplit("/", 1)[-1].rsplit("\\", 1)[-1] or name
