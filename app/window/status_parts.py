"""The status bar's permanent parts, each set apart by a thin line, and the words for the backend a
model runs on ("PyTorch on CPU · float32", "llama.cpp on CPU", "MLX on Apple GPU").

    bar.addPermanentWidget(StatusPart(label))       # a line, then the label; hidden while it is empty
    backend_text("torch", "cpu", "float32")         # "PyTorch on CPU · float32"
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

BACKEND_NAMES = {"torch": "PyTorch", "mlx": "MLX", "llamacpp": "llama.cpp", "remote": "Remote server"}
"""How each engine backend is named to the user; an unknown one is shown as the engine names it."""
DEVICE_NAMES = {"cpu": "CPU", "cuda": "NVIDIA GPU (CUDA)", "mps": "Apple GPU (MPS)", "metal": "Apple GPU",
                "gpu": "GPU", "vulkan": "GPU (Vulkan)"}


def backend_name(backend: str) -> str:
    return BACKEND_NAMES.get(backend, backend)


def backend_text(backend: str, device: str, precision: str = "") -> str:
    """One line naming what runs the model: "PyTorch on CPU · float32 · 4-bit weights"; a remote
    server is named by its address ("Remote server at 127.0.0.1:8317")."""
    if backend == "remote":
        return f"{backend_name(backend)} at {device}"
    where = f"{backend_name(backend)} on {DEVICE_NAMES.get(device, device)}"
    return where + (f" · {precision}" if precision else "")


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


class PartLabel(QLabel):
    """A status label whose `StatusPart` shows only while it has text, and which gives up width
    when the window is narrow: its text is then elided ("PyTorch on CPU · bflo…"), never clipped
    mid-letter or pushed under its neighbour; `text()` is still the whole text."""

    part: Optional[StatusPart] = None
    MIN_WIDTH = 80
    """Narrowest it gets before the status bar runs out of room."""

    def __init__(self, text: str = "", parent: Optional[QWidget] = None) -> None:
        self._full = text
        super().__init__(text, parent)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt name)
        self._full = text
        self._fit()
        self.updateGeometry()
        if self.part is not None:
            self.part.setVisible(bool(text))

    def text(self) -> str:
        return self._full

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        hint = super().sizeHint()
        return QSize(self.fontMetrics().horizontalAdvance(self._full) + 2 * self.margin() + 4, hint.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return QSize(min(self.MIN_WIDTH, self.sizeHint().width()), super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = self.width() if self.isVisible() else self.sizeHint().width()
        QLabel.setText(self, self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight,
                                                           max(width - 2 * self.margin(), 0)))

    def shown_text(self) -> str:
        """What is drawn now (the text, elided to the room there is)."""
        return QLabel.text(self)
