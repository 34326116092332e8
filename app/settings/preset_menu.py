"""File ▸ New conversation from preset: one entry per saved preset, read when the menu opens.

    menu = PresetMenu(home, window)
    menu.chosen.connect(lambda name, preset: ...)   # start a new conversation with it
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QMenu, QWidget

from app.settings.presets import load_presets

EMPTY_TEXT = "No presets yet (save one in Conversation settings…)"


class PresetMenu(QMenu):
    """Lists the presets kept in `home`'s settings file each time it opens."""

    chosen = Signal(str, object)
    """(name, Preset) the user picked."""

    def __init__(self, home: Path, parent: Optional[QWidget] = None) -> None:
        super().__init__("New conversation from &preset", parent)
        self.home = home
        self.aboutToShow.connect(self.fill)
        self.fill()

    def fill(self) -> None:
        self.clear()
        presets = load_presets(self.home)
        if not presets:
            self.addAction(EMPTY_TEXT).setEnabled(False)
        for name, preset in presets.items():
            action = self.addAction(name.replace("&", "&&"))
            action.setToolTip(preset.system_prompt)
            action.triggered.connect(lambda _checked=False, n=name, p=preset: self.chosen.emit(n, p))
