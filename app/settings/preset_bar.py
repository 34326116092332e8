"""The presets row of the conversation settings dialog: pick a preset to fill the dialog, save the
dialog's values as a named preset, delete one.

    bar = PresetBar(home, current=dialog.result)     # current() -> (system prompt, sampling)
    bar.chosen.connect(dialog.apply_preset)
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QInputDialog, QLabel, QPushButton, QSizePolicy, QWidget

from app.fitting import ElidedLabel

from app.settings.presets import Preset, clean_name, delete_preset, load_presets, save_preset
from app.settings.dialog import named

PLACEHOLDER = "Choose a preset…"


class PresetBar(QWidget):
    """Preset: [combo] [Save as preset…] [Delete]."""

    chosen = Signal(object)
    """The Preset picked in the combo (the dialog fills its fields with it)."""

    def __init__(self, home: Path, current: Callable[[], tuple[str, dict]],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.home = home
        self.current = current
        self.presets: dict[str, Preset] = {}
        self.combo = named(QComboBox(), "Preset", "Fill in a saved system prompt and sampling")
        self.combo.activated.connect(self._activated)
        self.save_button = named(QPushButton("Sa&ve as preset…"), "Save as preset",
                                 "Keep this system prompt and sampling under a name, for new conversations")
        self.save_button.clicked.connect(self.ask_save)
        self.delete_button = named(QPushButton("Delete"), "Delete preset", "Delete the chosen preset")
        self.delete_button.clicked.connect(self._delete)
        self.message = ElidedLabel("")  # "Saved “…”" never widens the dialog: elided, whole in its tooltip
        self.message.setAccessibleName("Preset message")
        self.message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        label = QLabel("&Preset:")
        label.setBuddy(self.combo)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(label)
        row.addWidget(self.combo, 2)
        row.addWidget(self.save_button)
        row.addWidget(self.delete_button)
        row.addWidget(self.message, 1)
        self.reload()

    def reload(self, select: str = "") -> None:
        self.presets = load_presets(self.home)
        self.combo.clear()
        self.combo.addItem(PLACEHOLDER if self.presets else "No presets yet")
        self.combo.addItems(list(self.presets))
        self.combo.setCurrentIndex(max(0, self.combo.findText(select)) if select else 0)
        self.delete_button.setEnabled(self.combo.currentIndex() > 0)

    def choose(self, name: str) -> None:
        """Pick `name` as the user would in the combo."""
        index = self.combo.findText(name)
        if index > 0:
            self.combo.setCurrentIndex(index)
            self._activated(index)

    def save_as(self, name: str) -> bool:
        """Save the dialog's values as `name`; False (with the reason shown) when the name is bad."""
        try:
            prompt, sampling = self.current()
            stored = save_preset(self.home, name, Preset(prompt, sampling))
        except (ValueError, OSError) as e:
            self._say(str(e))
            return False
        self._say(f"Saved “{stored}”.")
        self.reload(select=stored)
        return True

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setToolTip(text)

    def ask_save(self) -> None:
        name, ok = QInputDialog.getText(self, "Save as preset", "Preset name:",
                                        text=self.combo.currentText() if self.combo.currentIndex() > 0 else "")
        if ok:
            self.save_as(name)

    def _activated(self, index: int) -> None:
        self.delete_button.setEnabled(index > 0)
        preset = self.presets.get(self.combo.itemText(index)) if index > 0 else None
        if preset is not None:
            self._say("")
            self.chosen.emit(preset)

    def _delete(self) -> None:
        if self.combo.currentIndex() > 0:
            name = clean_name(self.combo.currentText())
            delete_preset(self.home, name)
            self._say(f"Deleted “{name}”.")
            self.reload()
