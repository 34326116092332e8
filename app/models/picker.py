"""Pick a model to load: the bundled one, those found on disk, or a folder / .gguf the user browses to.

    dialog = ModelPickerDialog(current_source, window, options_for=lambda s: load_options(home, s))
    if dialog.exec():   # the main window loads it; this dialog never does
        save_load_options(home, dialog.chosen_source(), dialog.chosen_options())
        load_with_progress(dialog.chosen_source(), dialog.chosen_options())

For the selected entry, its load options (context length, GPU layers, threads: app/models/
load_options_box.py) show what was chosen for it last, and a memory estimate (weights, and state per
conversation at the context chosen) and the context it was trained for are read from the files'
headers on a background thread; a result for an entry or a context no longer selected only fills
the cache. Discovery also runs in the background, so the dialog opens at once.
"""

from __future__ import annotations

from dataclasses import replace

import threading
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel, QMessageBox,
                               QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from engine import DEFAULT_MODEL, MemoryEstimate, estimate_memory, trained_context
from engine import parse_remote_source
from engine.remote.errors import host_of

from app.bridge import GuiRoute
from app.file_dialogs import choose_folder, open_file
from app.models.discovery import ModelCandidate, find_models
from app.models.files import delete_downloaded
from app.models.gpu_layers_row import gpu_offload_available
from app.models.load_options import LoadOptions
from app.models.load_options_box import LoadOptionsBox
from app.models.names import display_name, same_model_key
from app.settings.dialog import named

SOURCE_ROLE = Qt.ItemDataRole.UserRole
BUNDLED_NAME = display_name(DEFAULT_MODEL)
"""The bundled model as the window names it (its title, the status bar) once it is loaded."""
CURRENT = "Current model"
LOADED = "Loaded now"
Outcome = Union[MemoryEstimate, Exception]
Key = tuple[str, int, tuple[str, str]]
"""(source, context length, (K, V) cache types): what one estimate is of."""


def human_bytes(n: int) -> str:
    """257 MiB, 14.9 GiB: MiB below a GiB, GiB with one decimal above (KiB for small files)."""
    if n >= 2**30:
        return f"{n / 2**30:,.1f} GiB"
    if n >= 2**20:
        return f"{n / 2**20:,.0f} MiB"
    return f"{n / 2**10:,.0f} KiB"


def estimate_text(e: MemoryEstimate) -> str:
    return (f"Weights ≈ {human_bytes(e.weights_bytes)} · each conversation up to "
            f"{human_bytes(e.bytes_per_session)} at {e.max_context:,} tokens")


def run_in_thread(route: GuiRoute, work: Callable[[], object], done: Callable[[object], None]) -> None:
    """Run `work()` on a daemon thread; `done(result or exception)` runs on the GUI thread."""
    def target() -> None:
        try:
            result: object = work()
        except Exception as e:  # shown to the user as the engine's message
            result = e
        route.post(done, result)

    threading.Thread(target=target, name="confab-model-picker", daemon=True).start()


class ModelPickerDialog(QDialog):
    """A list of models with a memory estimate for the selected one; `chosen_source()` on accept."""

    def __init__(self, current: str, parent: Optional[QWidget] = None, *, max_context: int = 4096,
                 extra_dirs: Iterable[Path | str] = (), loaded_name: str = "", gpu_layers: Optional[int] = None,
                 options_for: Optional[Callable[[str], LoadOptions]] = None) -> None:
        """`max_context`: the context offered for a model with none remembered; `gpu_layers`: the GPU
        layers likewise (None: Auto); `options_for(source)`: what was chosen for a model last time."""
        super().__init__(parent)
        self.setWindowTitle("Load model")
        self.setAccessibleName("Load model")
        self._gpu_layers = gpu_layers
        self._options_for = options_for or (lambda _source: LoadOptions())
        self._route = GuiRoute(self)
        self._estimates: dict[Key, Outcome] = {}
        self._trained: dict[str, Optional[int]] = {}
        self._estimating: Optional[Key] = None
        self._current = current or DEFAULT_MODEL
        self._loaded_name = loaded_name
        """The loaded model's name as the window shows it ("" when none is loaded): its entry is marked."""

        layout = QVBoxLayout(self)
        intro = QLabel("Models found on this computer. Pick one, or browse to a model folder or .gguf file.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.models = named(QTreeWidget(), "Models", "Models Confab can load")
        self.models.setHeaderLabels(["Model", "Found in", "On disk"])
        self.models.setRootIsDecorated(False)
        self.models.setUniformRowHeights(True)
        self.models.setAlternatingRowColors(True)
        self.models.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.models.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.models.currentItemChanged.connect(lambda item, _old: self._selected(item))
        self.models.itemDoubleClicked.connect(lambda _item, _column: self._accept_if_loadable())
        layout.addWidget(self.models, 1)
        self.status = named(QLabel("Looking for models…"), "Search status")
        layout.addWidget(self.status)
        self.estimate = named(QLabel(""), "Memory estimate",
                              "Memory the model's weights take, and the most one conversation's state takes")
        self.estimate.setWordWrap(True)
        self.estimate.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.estimate)

        row = QHBoxLayout()
        self.browse_folder = named(QPushButton("&Browse folder…"), "Browse for a model folder",
                                   "A Hugging Face or MLX model folder (config.json and .safetensors files)")
        self.browse_folder.clicked.connect(self._browse_folder)
        self.open_gguf = named(QPushButton("Open .&gguf file…"), "Open a GGUF file",
                               "A single .gguf model file (converted once, then reused)")
        self.open_gguf.clicked.connect(self._open_gguf)
        row.addWidget(self.browse_folder)
        row.addWidget(self.open_gguf)
        row.addStretch(1)
        self.delete_button = named(QPushButton("&Delete from disk…"), "Delete the selected downloaded model",
                                   "Remove a model downloaded from Hugging Face, freeing its disk space")
        self.delete_button.setEnabled(False)
        self.delete_button.clicked.connect(self._delete)
        row.addWidget(self.delete_button)
        layout.addLayout(row)
        self.options_box = LoadOptionsBox(max_context)
        self.gpu_layers = self.options_box.gpu_layers
        self.gpu_layers.set_value(gpu_layers)
        self.options_box.show_gpu_layers(gpu_offload_available())
        self.options_box.context_changed.connect(lambda _tokens: self._estimate_selected())
        layout.addWidget(self.options_box)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.load_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.load_button.setText("&Load")
        self.load_button.setAccessibleName("Load the selected model")
        buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName("Cancel")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(620, 500)

        self._remote = parse_remote_source(self._current)
        """(base URL, model) while a server's model is in use: no local model is loaded then."""
        self._add(DEFAULT_MODEL, BUNDLED_NAME, "Bundled, ready to use")
        if self._remote is not None:  # the server's model: listed as such, never as a local file
            url, model = self._remote
            self._add(self._current, f"{model or url} (connected)", f"Server at {host_of(url)}")
            self._loaded_name = ""
            self._current = DEFAULT_MODEL  # offered first: this dialog loads models on this computer
        elif self._current != DEFAULT_MODEL:
            self._add(self._current, Path(self._current).name or self._current, CURRENT)
        self._mark_loaded()
        self._select(self._current)
        run_in_thread(self._route, lambda: find_models(extra_dirs), self._found)

    # -- list --------------------------------------------------------------------------------------
    def _add(self, source: str, name: str, where: str, size: str = "", row: Optional[int] = None) -> QTreeWidgetItem:
        item = QTreeWidgetItem([name, where, size])
        item.setData(0, SOURCE_ROLE, source)
        item.setTextAlignment(2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        for column in range(3):
            item.setToolTip(column, source)
        if row is None:
            self.models.addTopLevelItem(item)
        else:
            self.models.insertTopLevelItem(row, item)
        return item

    def _mark_loaded(self) -> None:
        """Show the loaded model under the name the window uses, in bold, "(loaded)"."""
        item = self._find(self._current)
        if item is None or not self._loaded_name:
            return
        item.setText(0, f"{self._loaded_name} (loaded)")
        item.setText(1, LOADED)
        font = item.font(0)
        font.setBold(True)
        item.setFont(0, font)

    def loaded_row(self) -> Optional[int]:
        """Row of the entry marked as loaded (None when no model is loaded)."""
        item = self._find(self._current)
        return self.models.indexOfTopLevelItem(item) if item is not None and self._loaded_name else None

    def item(self, row: int) -> Optional[QTreeWidgetItem]:
        """The entry at `row` (0 is the bundled model)."""
        return self.models.topLevelItem(row)

    def count(self) -> int:
        """Entries listed."""
        return self.models.topLevelItemCount()

    def source_at(self, row: int) -> str:
        item = self.item(row)
        return item.data(0, SOURCE_ROLE) if item is not None else ""

    def _find(self, source: str) -> Optional[QTreeWidgetItem]:
        """The entry of `source`, or of the same file or folder reached another way (a link, a
        relative path, a trailing slash): one model is one entry, under one name."""
        key = same_model_key(source)
        for i in range(self.count()):
            if same_model_key(self.source_at(i)) == key:
                return self.item(i)
        return None

    def _select(self, source: str) -> None:
        item = self._find(source)
        if item is not None:
            self.models.setCurrentItem(item)

    def _found(self, result: object) -> None:
        if isinstance(result, Exception):
            self.status.setText(f"Could not look for models: {result}")
            return
        candidates: list[ModelCandidate] = list(result)  # type: ignore[arg-type]
        for c in candidates:
            item = self._find(c.source)
            if item is None:
                self._add(c.source, c.name, c.where, human_bytes(c.size_bytes))
            elif item.text(1) in (CURRENT, LOADED):  # named as the list names it elsewhere, where it is
                item.setText(0, c.name)
                item.setText(1, c.where)
                item.setText(2, human_bytes(c.size_bytes))
        self._mark_loaded()
        n = len(candidates)
        self.status.setText(f"Found {n} model{'s' if n != 1 else ''} in the Hugging Face cache, "
                            "LM Studio's and Confab's models folders." if n else
                            "No other models found in the Hugging Face cache, LM Studio's or Confab's "
                            "models folders.")

    def add_source(self, source: str) -> None:
        """Add a browsed folder or file (once) right after the bundled entry, and select it."""
        if self._find(source) is None:
            path = Path(source)
            self._add(source, path.name, "Chosen by you", row=1)
        self._select(source)

    def _browse_folder(self) -> None:
        folder = choose_folder(self, "Choose a model folder")
        if folder is not None:
            self.add_source(str(folder))

    def _open_gguf(self) -> None:
        file = open_file(self, "Open a GGUF model", "GGUF models (*.gguf)")
        if file is not None:
            self.add_source(str(file))

    # -- estimate ----------------------------------------------------------------------------------
    def _selected(self, item: Optional[QTreeWidgetItem]) -> None:
        self.load_button.setEnabled(item is not None)
        self.delete_button.setEnabled(item is not None and item.text(1) == "Hugging Face cache")
        if item is None:
            self.estimate.setText("")
            return
        source = item.data(0, SOURCE_ROLE)
        if (remote := parse_remote_source(source)) is not None:  # nothing here to estimate or load
            self.estimate.setText(f"{remote[1] or 'This model'} runs on the server at {host_of(remote[0])}; "
                                  "nothing is loaded on this computer. Model ▸ Connect to server… changes it.")
            self.load_button.setEnabled(False)
            self.load_button.setToolTip("Connected now: Model ▸ Connect to server… changes the server or model")
            return
        self.options_box.blockSignals(True)  # one estimate for the options shown, not one per value
        remembered = self._options_for(source)
        if remembered.gpu_layers is None:
            remembered = replace(remembered, gpu_layers=self._gpu_layers)  # the rest as remembered
        self.options_box.show_options(remembered)
        if source in self._trained:
            self.options_box.set_trained(self._trained[source])
        self.options_box.blockSignals(False)
        self._estimate_selected()

    def _wanted(self) -> Optional[Key]:
        """What the estimate shown should be of: the selected model at the context chosen."""
        source = self.chosen_source()
        if not source or parse_remote_source(source) is not None:
            return None
        return source, self.options_box.context.value(), self.options_box.kv_cache.types()

    def _estimate_selected(self) -> None:
        key = self._wanted()
        if key is None:
            return
        if key in self._estimates:  # a known failure keeps Load disabled (see _show)
            self._show(self._estimates[key])
            return
        self.estimate.setText("Estimating memory…")
        if self._estimating is None:  # one at a time; the latest selection goes next
            self._start_estimate(key)

    def _start_estimate(self, key: Key) -> None:
        self._estimating = key
        source, context, (k, v) = key

        def work() -> tuple[Optional[int], Outcome]:
            try:
                trained = trained_context(source)
            except Exception:  # the estimate says what is wrong with the model
                trained = None
            try:
                return trained, estimate_memory(source, max_context=context, cache_type_k=k, cache_type_v=v)
            except Exception as e:
                return trained, e

        run_in_thread(self._route, work, lambda result: self._estimated(key, result))

    def _estimated(self, key: Key, result: object) -> None:
        self._estimating = None
        trained, outcome = result if isinstance(result, tuple) else (None, result)
        self._estimates[key] = outcome
        source = key[0]
        if source not in self._trained and isinstance(outcome, MemoryEstimate):
            self._trained[source] = trained
            if self.chosen_source() == source:
                self.options_box.set_trained(trained)  # a longer context comes down: estimated again
        wanted = self._wanted()
        if wanted == key:
            self._show(outcome)
        elif wanted is not None and wanted not in self._estimates and self._estimating is None:
            self._start_estimate(wanted)  # a stale result: estimate what is selected now

    def _show(self, outcome: Outcome) -> None:
        """The selected entry's estimate; one that cannot be read cannot be loaded: Load is off."""
        loadable = isinstance(outcome, MemoryEstimate)
        self.load_button.setEnabled(loadable)
        self.load_button.setToolTip("" if loadable else "This model cannot be loaded (see why above)")
        if loadable:
            self.estimate.setText(estimate_text(outcome))
        else:
            self.estimate.setText(f"Cannot load this model: {outcome}")

    def _accept_if_loadable(self) -> None:
        if self.load_button.isEnabled():
            self.accept()
    # -- delete ------------------------------------------------------------------------------------
    def confirm_delete(self, name: str, size: str) -> bool:
        answer = QMessageBox.question(self, "Delete model", f"Delete {name} from disk? This frees {size}.")
        return answer == QMessageBox.StandardButton.Yes

    def _delete(self) -> None:
        item = self.models.currentItem()
        if item is None or item.text(1) != "Hugging Face cache":
            return
        source = item.data(0, SOURCE_ROLE)
        if source == self._current or not self.confirm_delete(item.text(0), item.text(2)):
            if source == self._current:
                self.status.setText("This model is loaded; load another one before deleting it.")
            return
        run_in_thread(self._route, lambda: delete_downloaded(source), lambda result: self._deleted(source, result))

    def _deleted(self, source: str, result: object) -> None:
        if isinstance(result, Exception):
            self.status.setText(f"Could not delete: {result}")
            return
        item = self._find(source)
        if item is not None:
            self.models.takeTopLevelItem(self.models.indexOfTopLevelItem(item))
        self.status.setText(f"Deleted; {human_bytes(int(result))} freed.")  # type: ignore[call-overload]

    def chosen_source(self) -> str:
        """Source string of the selected entry ("" when none is selected)."""
        item = self.models.currentItem()
        return item.data(0, SOURCE_ROLE) if item is not None else ""

    def chosen_gpu_layers(self) -> Optional[int]:
        """The GPU layers asked for (None: Auto, and wherever the build has no GPU)."""
        return self.chosen_options().gpu_layers

    def chosen_options(self) -> LoadOptions:
        """Context length, GPU layers and threads as chosen for the selected model."""
        return self.options_box.options()

    def done(self, result: int) -> None:
        self._route.close()  # results still on their way would touch a closed dialog
        super().done(result)
