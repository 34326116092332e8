"""The Load-model dialog's options for the selected model: context length (up to what the model was
trained for), GPU layers (where llama.cpp has a GPU), CPU threads, the K/V cache type and the vision projector (an
`mmproj` file that lets a GGUF model see images: found beside the model, or chosen here), Auto where
the engine decides.

    box = LoadOptionsBox(default_context=4096)
    box.show_options(load_options(home, source))   # what was chosen for this model last time
    box.set_trained(8192)                           # once read from the model's header
    box.context_changed.connect(re_estimate)        # the memory shown follows the context
    box.options()                                   # LoadOptions to remember and load with
"""

from __future__ import annotations

import os
from typing import Optional

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFormLayout, QHBoxLayout, QLabel, QPushButton, QSpinBox, QWidget

from app.file_dialogs import open_file
from app.fitting import ElidedLabel
from app.models.gpu_layers_row import GpuLayersRow, gpu_offload_available
from app.models.kv_cache_combo import KvCacheCombo
from app.models.load_options import LoadOptions
from app.settings.dialog import named

MIN_CONTEXT = 512
UNKNOWN_MOST = 32768
"""Most context offered for a model that does not say how long it was trained for."""
AUTO = 0
MMPROJ_AUTO = "Auto: an mmproj*.gguf beside the model, if there is one"
MMPROJ_FILTER = "Vision projectors (*.gguf);;All files (*)"


class LoadOptionsBox(QWidget):
    """Context length, GPU layers and threads, in one form."""

    context_changed = Signal(int)
    """The context or the K/V cache type changed: the memory estimate follows either."""

    def __init__(self, default_context: int = 4096, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.default_context = default_context
        self.context = named(QSpinBox(), "Context length",
                             "Most tokens one conversation holds, prompt and replies together; longer takes "
                             "more memory (the estimate above follows it)")
        self.context.setRange(MIN_CONTEXT, UNKNOWN_MOST)
        self.context.setSingleStep(1024)
        self.context.setGroupSeparatorShown(True)
        self.context.setSuffix(" tokens")
        self.context.setValue(default_context)
        self.context.valueChanged.connect(self.context_changed)
        self.trained = named(QLabel(""), "Trained context")
        self.trained.setEnabled(False)  # greyed: a hint, not a control
        self.threads = named(QSpinBox(), "Threads",
                             "CPU threads that compute (torch on the CPU, llama.cpp): Auto uses the "
                             "processor's cores; fewer leave room for other programs")
        self.threads.setRange(AUTO, os.cpu_count() or 1)
        self.threads.setSpecialValueText("Auto")
        threads_note = QLabel(f"of {os.cpu_count() or 1} on this computer")
        threads_note.setEnabled(False)
        self.gpu_layers = GpuLayersRow(captioned=False)
        self.kv_cache = KvCacheCombo()
        self.kv_cache.currentIndexChanged.connect(lambda _i: self.context_changed.emit(self.context.value()))
        self.mmproj: Optional[str] = None
        """The vision projector chosen (None: Auto)."""
        self.mmproj_label = ElidedLabel(MMPROJ_AUTO)
        self.mmproj_label.setAccessibleName("Vision projector")
        self.mmproj_button = QPushButton("Choose…", accessibleName="Choose a vision projector",
                                         toolTip="A GGUF model sees images with its vision projector (an "
                                                 "mmproj .gguf file); choose it when it is not beside the model")
        self.mmproj_button.clicked.connect(self._choose_mmproj)
        self.mmproj_auto = QPushButton("Auto", accessibleName="Find the vision projector beside the model")
        self.mmproj_auto.clicked.connect(lambda: self.set_mmproj(None))

        self.form = QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self._row("Con&text length:", self.context, self.trained)
        self._row("T&hreads:", self.threads, threads_note)
        caption = QLabel("&GPU layers:")
        caption.setBuddy(self.gpu_layers.spin)
        self.form.addRow(caption, self.gpu_layers)
        caption = QLabel("&K/V cache:")
        caption.setBuddy(self.kv_cache)
        self.form.addRow(caption, self.kv_cache)
        vision = QHBoxLayout()
        vision.addWidget(self.mmproj_label, 1)
        vision.addWidget(self.mmproj_button)
        vision.addWidget(self.mmproj_auto)
        caption = QLabel("&Images:")
        caption.setBuddy(self.mmproj_button)
        self.form.addRow(caption, vision)
        self.show_gpu_layers(gpu_offload_available())
        self.set_mmproj(None)

    def set_mmproj(self, path: Optional[str]) -> None:
        """The vision projector to load with (None: Auto, the one beside the model)."""
        self.mmproj = path
        self.mmproj_label.setText(Path(path).name if path else MMPROJ_AUTO)
        self.mmproj_label.setToolTip(path or "A GGUF model sees images when its mmproj*.gguf file is in "
                                             "the same folder; or choose the file")
        self.mmproj_auto.setEnabled(path is not None)

    def _choose_mmproj(self) -> None:
        chosen = open_file(self.window(), "Choose the model's vision projector (mmproj)", MMPROJ_FILTER)
        if chosen is not None:
            self.set_mmproj(str(chosen))

    def _row(self, caption: str, spin: QSpinBox, note: QLabel) -> None:
        """A form row: the value at its own width, a greyed note after it."""
        row = QHBoxLayout()
        row.addWidget(spin)
        row.addWidget(note, 1)
        label = QLabel(caption)
        label.setBuddy(spin)
        self.form.addRow(label, row)

    def show_gpu_layers(self, shown: bool) -> None:
        """The GPU layers row, with its caption, only where llama.cpp's build has a GPU."""
        self.form.setRowVisible(self.gpu_layers, shown)

    def show_options(self, options: LoadOptions) -> None:
        """Show a model's remembered choices (the defaults where it has none); `set_trained` then
        bounds the context by this model's own length."""
        self.trained.setText("")
        context = options.max_context or self.default_context
        self.context.setMaximum(max(UNKNOWN_MOST, context))  # not the last model's bound
        self.context.setValue(context)
        self.threads.setValue(options.threads or AUTO)
        self.gpu_layers.set_value(options.gpu_layers)
        self.set_mmproj(options.mmproj)
        self.kv_cache.set_types(options.cache_type_k, options.cache_type_v)

    def set_trained(self, trained: Optional[int]) -> None:
        """The model's trained context: the most the context may be (a longer value comes down)."""
        self.context.setMaximum(max(trained or UNKNOWN_MOST, MIN_CONTEXT))
        self.trained.setText(f"of {trained:,} it was trained for" if trained else "the model does not say its own")

    def options(self) -> LoadOptions:
        """The choices shown (GPU layers only where the build has a GPU)."""
        layers = self.gpu_layers.value() if self.gpu_layers.isVisibleTo(self) else None
        chosen = self.kv_cache.types()
        k, v = chosen if chosen != ("f16", "f16") else (None, None)  # the default: left to the command line
        return LoadOptions(max_context=self.context.value(), gpu_layers=layers,
                           threads=self.threads.value() or None, mmproj=self.mmproj, cache_type_k=k, cache_type_v=v)
