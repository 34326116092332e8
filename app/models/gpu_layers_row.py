"""The Load-model dialog's "GPU layers" row: Auto (as many as fit, the engine's own count) or a number.

Shown only where llama.cpp's build can put layers on a GPU: elsewhere the number would mean nothing.
Auto is the default, as in LM Studio; a number is for the user who keeps memory free for another
program (0: the CPU only). The engine clamps a number past the model's layer count.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QWidget

from engine import llama_library

from app.settings.dialog import named

AUTO = -1
MOST = 999


def gpu_offload_available() -> bool:
    """Whether the llama.cpp installed here was built with a GPU backend (CUDA, Vulkan, Metal)."""
    return llama_library().gpu_offload


class GpuLayersRow(QWidget):
    """A label and a spin box whose lowest value reads "Auto"."""

    def __init__(self, parent: Optional[QWidget] = None, *, captioned: bool = True) -> None:
        """`captioned`: with its own "GPU layers:" label (False where a form gives the row one)."""
        super().__init__(parent)
        self.spin = named(QSpinBox(), "GPU layers",
                          "Layers of a .gguf model on the GPU: Auto puts as many as fit beside one conversation "
                          "at full context; 0 runs on the CPU alone")
        self.spin.setRange(AUTO, MOST)
        self.spin.setSpecialValueText("Auto")
        self.spin.setValue(AUTO)
        label = QLabel("&GPU layers:")
        label.setBuddy(self.spin)
        note = QLabel("llama.cpp (.gguf files)")
        note.setEnabled(False)  # greyed: a hint, not a control
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        if captioned:
            row.addWidget(label)
        row.addWidget(self.spin)
        row.addWidget(note)
        row.addStretch(1)

    def value(self) -> Optional[int]:
        """None for Auto, else the number of layers."""
        return None if self.spin.value() == AUTO else self.spin.value()

    def set_value(self, layers: Optional[int]) -> None:
        self.spin.setValue(AUTO if layers is None else layers)
