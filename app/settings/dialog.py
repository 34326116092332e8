"""The Settings dialog (Ctrl+,): look, default sampling, data folder, saved-state budget, tray.

    dialog = SettingsDialog(settings, data_dir(), QSystemTrayIcon.isSystemTrayAvailable(), window)
    if dialog.exec():
        settings = dialog.result_settings()
        save_settings(data_dir(), settings)
        apply_theme(app, settings.theme, settings.font_size)
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Optional

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QKeySequence
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox,
                               QFormLayout, QFrame, QGroupBox, QHBoxLayout, QKeySequenceEdit, QLabel, QLineEdit,
                               QPushButton, QScrollArea, QSpinBox, QToolButton, QVBoxLayout, QWidget)

from app.settings.draft_model_row import DraftModelRow
from app.settings.local_server_settings import LocalServerGroup
from app.settings.app_settings import (FONT_SIZE_RANGE, PREFIX_CACHE_MB_RANGE, STATE_BUDGET_MB_RANGE, THEMES,
                                       AppSettings)
from app.settings.sampling_fields import FIELDS

NO_TRAY_TEXT = "This system has no tray icon area"
MENUBAR_ONLY_TEXT = "Menubar-only is a macOS option: it hides the Dock icon"
MAX_HEIGHT = 660
"""Tallest the dialog opens: it fits a 768 px screen with a title bar and a panel (it scrolls)."""
_THEME_LABELS = {"system": "Follow the system", "light": "Light", "dark": "Dark"}


def named(widget: QWidget, name: str, tip: str = "") -> QWidget:
    """Give `widget` an accessible name (and a tooltip); return it, for use inline."""
    widget.setAccessibleName(name)
    if tip:
        widget.setToolTip(tip)
    return widget


class SettingsDialog(QDialog):
    """Edits a copy of AppSettings; `result_settings()` returns the edited copy."""

    def __init__(self, settings: AppSettings, data_folder: Path, tray_available: bool,
                 parent: Optional[QWidget] = None, shortcut_status: str = "") -> None:
        """`shortcut_status`: whether the global quick chat shortcut works here, and if not why."""
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        self._settings = settings
        self._data_folder = Path(data_folder)
        groups = QWidget()
        column = QVBoxLayout(groups)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self._look_group(settings))
        column.addWidget(self._sampling_group(settings))
        column.addWidget(self._storage_group(settings))
        column.addWidget(self._window_group(settings, tray_available))
        column.addWidget(self._shortcut_group(settings, shortcut_status))
        self.local_server = LocalServerGroup(settings)
        column.addWidget(self.local_server)
        self.scroll = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(groups)  # a short screen scrolls the groups; the buttons stay in view
        layout = QVBoxLayout(self)
        layout.addWidget(self.scroll, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setAccessibleName("Save settings")
        buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName("Discard changes")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._fit_screen(groups, buttons)

    def _fit_screen(self, groups: QWidget, buttons: QWidget) -> None:
        """As tall as the groups, but never taller than `MAX_HEIGHT` or most of the screen."""
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        room = min(MAX_HEIGHT, int(screen.height() * 0.9)) if screen is not None else MAX_HEIGHT
        bar = self.style().pixelMetric(self.style().PixelMetric.PM_ScrollBarExtent)
        margins = self.layout().contentsMargins()
        whole = groups.sizeHint().height() + buttons.sizeHint().height() + self.layout().spacing() \
            + margins.top() + margins.bottom()
        self.scroll.setMinimumWidth(groups.sizeHint().width() + bar)
        self.resize(self.sizeHint().width(), min(whole, room))

    # -- groups ------------------------------------------------------------------------------------
    def _look_group(self, s: AppSettings) -> QGroupBox:
        box = QGroupBox("Appearance")
        form = QFormLayout(box)
        self.theme = named(QComboBox(), "Theme", "Light, dark, or follow the system's choice")
        for key in THEMES:
            self.theme.addItem(_THEME_LABELS[key], key)
        self.theme.setCurrentIndex(THEMES.index(s.theme))
        self.font_size = named(QSpinBox(), "Font size", "Text size in points")
        self.font_size.setRange(*FONT_SIZE_RANGE)
        self.font_size.setSuffix(" pt")
        self.font_size.setValue(s.font_size)
        form.addRow("&Theme:", self.theme)
        form.addRow("&Font size:", self.font_size)
        return box

    def _sampling_group(self, s: AppSettings) -> QGroupBox:
        box = QGroupBox("Default sampling (conversations may override)")
        form = QFormLayout(box)
        self.sampling: dict[str, QWidget] = {}
        for field in FIELDS:
            spin = field.spin()
            spin.setAccessibleName(f"Default {field.name[0].lower()}{field.name[1:]}")
            spin.setValue(getattr(s, field.key))
            self.sampling[field.key] = spin
            form.addRow(field.label, spin)
        self.temperature, self.top_p, self.max_tokens = (self.sampling[k] for k in ("temperature", "top_p", "max_tokens"))
        self.speculative = named(
            QCheckBox("&Draft tokens ahead"), "Draft tokens ahead",
            "llama.cpp: guess the next tokens from the conversation itself and check them in one step; "
            "the same replies, sooner where they repeat what is there (code edits, quotes)")
        self.speculative.setChecked(s.speculative)
        form.addRow("", self.speculative)
        self.draft_model = DraftModelRow(s.draft_model)
        label = QLabel("D&raft model:")
        label.setBuddy(self.draft_model.path)  # Alt+R goes to the path, not to the row around it
        form.addRow(label, self.draft_model)
        self.speculative.toggled.connect(self.draft_model.setEnabled)
        self.draft_model.setEnabled(s.speculative)
        return box

    def _storage_group(self, s: AppSettings) -> QGroupBox:
        box = QGroupBox("Storage")
        form = QFormLayout(box)
        self.data_folder = named(QLineEdit(str(self._data_folder)), "Data folder",
                                 "Where conversations and saved session states are kept")
        self.data_folder.setReadOnly(True)
        self.data_folder.setCursorPosition(0)  # show where the path starts
        self.data_folder.setToolTip(str(self._data_folder))
        self.data_folder.setMinimumWidth(260)
        self.open_folder = named(QPushButton("&Open folder"), "Open data folder",
                                 "Show the data folder in the file manager")
        self.open_folder.clicked.connect(self._open_data_folder)
        row = QHBoxLayout()
        row.addWidget(self.data_folder, 1)
        row.addWidget(self.open_folder)
        self.state_budget = named(QSpinBox(), "Saved-state budget",
                                  "Disk space for saved conversation states; the oldest are deleted past it. "
                                  "They are a cache: conversations themselves are never deleted.")
        self.state_budget.setRange(*STATE_BUDGET_MB_RANGE)
        self.state_budget.setSingleStep(256)
        self.state_budget.setSuffix(" MiB")
        self.state_budget.setGroupSeparatorShown(True)
        self.state_budget.setValue(s.state_budget_mb)
        form.addRow("Data folder:", row)
        form.addRow("Saved-state &budget:", self.state_budget)
        self.prefix_cache = named(QSpinBox(), "Prompt cache",
                                  "Disk space for prompts the model has read (llama.cpp), so a long prompt seen "
                                  "before is read back instead of computed, after a restart too; the least "
                                  "recently used go first. Off at 0. Applies when a model loads.")
        self.prefix_cache.setRange(*PREFIX_CACHE_MB_RANGE)
        self.prefix_cache.setSingleStep(1024)
        self.prefix_cache.setSuffix(" MiB")
        self.prefix_cache.setSpecialValueText("Off")
        self.prefix_cache.setGroupSeparatorShown(True)
        self.prefix_cache.setValue(s.prefix_cache_mb)
        form.addRow("Prompt cache on di&sk:", self.prefix_cache)
        self.keep_attachment_files = named(
            QCheckBox("&Keep a copy of attached files"), "Keep a copy of attached files",
            "Store each attached file itself (up to 64 MB) with its message, besides the text sent to "
            "the model; off, only the text is kept")
        self.keep_attachment_files.setChecked(s.keep_attachment_files)
        form.addRow("", self.keep_attachment_files)
        return box

    def _window_group(self, s: AppSettings, tray_available: bool) -> QGroupBox:
        box = QGroupBox("Window")
        column = QVBoxLayout(box)
        self.close_to_tray = named(QCheckBox("&Close to tray"), "Close to tray",
                                   "Closing the window keeps Confab running in the tray")
        self.close_to_tray.setChecked(s.close_to_tray and tray_available)
        self.close_to_tray.setEnabled(tray_available)
        column.addWidget(self.close_to_tray)
        if not tray_available:
            column.addWidget(self._note(NO_TRAY_TEXT, "No tray"))
        on_mac = sys.platform == "darwin"
        self.menubar_only = named(QCheckBox("Menubar-only (macOS)"), "Menubar-only",
                                  "Run from the menubar with no Dock icon (takes effect at next start)")
        self.menubar_only.setChecked(s.menubar_only and on_mac)
        self.menubar_only.setEnabled(on_mac)
        column.addWidget(self.menubar_only)
        if not on_mac:
            column.addWidget(self._note(MENUBAR_ONLY_TEXT, "Menubar-only unavailable"))
        self.confirm_quit = named(QCheckBox("&Ask before quitting while replies are being written"),
                                  "Ask before quitting", "Quitting cuts off replies still being written")
        self.confirm_quit.setChecked(s.confirm_quit)
        column.addWidget(self.confirm_quit)
        return box

    def _shortcut_group(self, s: AppSettings, status: str) -> QGroupBox:
        box = QGroupBox("Quick chat")
        form = QFormLayout(box)
        self.shortcut = named(QKeySequenceEdit(QKeySequence(s.quick_chat_shortcut)), "Quick chat shortcut",
                              "Opens the quick chat from any program; press the keys to change it")
        self.shortcut.setMaximumSequenceLength(1)
        self.shortcut.setClearButtonEnabled(True)
        for line in self.shortcut.findChildren(QLineEdit):  # its parts, named for screen readers
            line.setAccessibleName("Quick chat shortcut keys")
        for button in self.shortcut.findChildren(QToolButton):
            button.setAccessibleName("Clear quick chat shortcut")
        form.addRow("&Global shortcut:", self.shortcut)
        self.shortcut_status = self._note(status, "Quick chat shortcut status")
        self.shortcut_status.setVisible(bool(status))
        form.addRow("", self.shortcut_status)
        return box

    def _note(self, text: str, name: str) -> QLabel:
        label = named(QLabel(text), name)
        label.setWordWrap(True)
        label.setEnabled(False)  # drawn in the palette's (readable) disabled text color
        return label

    # -- actions -----------------------------------------------------------------------------------
    def _open_data_folder(self) -> None:
        self._data_folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self._data_folder)))

    def result_settings(self) -> AppSettings:
        """The settings as edited (the values given, where a control is unavailable here)."""
        return replace(
            self._settings,
            theme=self.theme.currentData(),
            font_size=self.font_size.value(),
            **{field.key: field.value(self.sampling[field.key]) for field in FIELDS},
            speculative=self.speculative.isChecked(),
            draft_model=self.draft_model.value(),
            state_budget_mb=self.state_budget.value(),
            prefix_cache_mb=self.prefix_cache.value(),
            close_to_tray=self.close_to_tray.isChecked() if self.close_to_tray.isEnabled()
            else self._settings.close_to_tray,
            menubar_only=self.menubar_only.isChecked() if self.menubar_only.isEnabled()
            else self._settings.menubar_only,
            quick_chat_shortcut=self.shortcut.keySequence().toString(QKeySequence.SequenceFormat.PortableText),
            confirm_quit=self.confirm_quit.isChecked(),
            keep_attachment_files=self.keep_attachment_files.isChecked(),
            **self.local_server.values(),
        )
