"""One conversation's settings: its system prompt, and sampling values that override the app's.

    dialog = ConversationSettingsDialog(conversation, app_settings, window)
    if dialog.exec():
        system_prompt, sampling = dialog.result()   # sampling holds only the overridden keys
        bridge.run(lambda store: store.update_conversation(cid, system_prompt=..., sampling=...))

Each sampling value has a "Use default" box: ticked, the value follows the app setting (and is left
out of the sampling dict, so a later change of the default applies here too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QFrame, QHBoxLayout,
                               QLabel, QPlainTextEdit, QPushButton, QScrollArea, QVBoxLayout, QWidget)

from app.store import Conversation

from app.chat.markdown_render import plain_title
from app.conversations.context_policy import KEY as POLICY_KEY
from app.conversations.context_policy import policy_of
from engine import truncation
from app.settings.preset_bar import PresetBar
from app.settings.presets import Preset
from app.settings.app_settings import AppSettings, sampling_params
from app.settings.dialog import named
from app.settings.sampling_fields import BY_KEY, FIELDS, SpinBox


class _WholeScroll(QScrollArea):
    """Nine values and a system prompt outgrow a 480 px screen: there the values scroll, and wherever
    the dialog has room they show whole (a plain scroll area asks for less than its contents)."""

    def __init__(self, contents: QWidget, least: int) -> None:
        super().__init__(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(contents)
        self.setMinimumHeight(least)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        hint = self.widget().sizeHint()
        return QSize(hint.width() + self.verticalScrollBar().sizeHint().width(), hint.height())


class ConversationSettingsDialog(QDialog):
    """Edits one conversation's system prompt and sampling overrides."""

    def __init__(self, conversation: Conversation, defaults: AppSettings, parent: Optional[QWidget] = None,
                 *, home: Optional[Path] = None, new: bool = False) -> None:
        """`home`: the app's folder, whose settings file keeps the presets (None: no presets row).
        `new`: the settings of a conversation not created yet (its first message creates it)."""
        super().__init__(parent)
        title = "the new conversation" if new else plain_title(conversation.title) or "this conversation"
        self.setWindowTitle(f"Conversation settings for {title}")
        self.setAccessibleName("Conversation settings")
        self._defaults = defaults
        own = sampling_params(conversation.sampling, defaults)  # the conversation's values, checked
        layout = QVBoxLayout(self)
        self.presets: Optional[PresetBar] = None
        if home is not None:
            self.presets = PresetBar(home, self.result)
            self.presets.chosen.connect(self.apply_preset)
            layout.addWidget(self.presets)

        prompt_label = QLabel("&System prompt:")
        self.system_prompt = named(QPlainTextEdit(conversation.system_prompt), "System prompt",
                                   "Instructions the model sees before every message of this conversation")
        self.system_prompt.setPlaceholderText("For example: You are a concise assistant. Answer in English.")
        prompt_label.setBuddy(self.system_prompt)
        layout.addWidget(prompt_label)
        layout.addWidget(self.system_prompt, 1)

        form = QFormLayout()
        self.spins: dict[str, SpinBox] = {}
        self.use_default: dict[str, QCheckBox] = {}
        for field in FIELDS:
            key, name = field.key, field.name
            spin = field.spin()
            spin.setValue(getattr(own, key))
            box = named(QCheckBox(f"Use default ({field.shown(getattr(defaults, key))})"), f"Use default {name.lower()}",
                        f"Follow the app's default {name.lower()} (set in Settings)")
            self.spins[key], self.use_default[key] = spin, box
            box.toggled.connect(lambda checked, k=key: self._follow_default(k, checked))
            box.setChecked(key not in conversation.sampling)
            self._follow_default(key, box.isChecked())
            spin.setMinimumWidth(110)
            row = QHBoxLayout()
            row.addWidget(spin)
            row.addWidget(box, 1)
            caption = QLabel(field.label)
            caption.setBuddy(spin)  # Alt+letter focuses the value
            form.addRow(caption, row)
        self.context_policy = named(QComboBox(), "When the conversation is too long",
                                    "What happens once this conversation no longer fits in the model's context")
        self.context_policy.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.context_policy.setMinimumContentsLength(16)  # long labels must not widen the dialog
        for policy in truncation.POLICIES:
            self.context_policy.addItem(truncation.LABELS[policy], policy)
        self.context_policy.setCurrentIndex(truncation.POLICIES.index(policy_of(conversation.sampling)))
        caption = QLabel("When too &long:")
        caption.setBuddy(self.context_policy)
        form.addRow(caption, self.context_policy)
        values = QWidget()
        values.setLayout(form)
        form.setContentsMargins(0, 0, 0, 0)
        self.values = _WholeScroll(values, 3 * self.spins["temperature"].sizeHint().height())
        layout.addWidget(self.values)

        self.reset = named(QPushButton("Use app &defaults for all"), "Use app defaults for all",
                           "Follow the app's default sampling for every value")
        self.reset.clicked.connect(lambda: [b.setChecked(True) for b in self.use_default.values()])
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setAccessibleName("Save conversation settings")
        buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName("Discard changes")
        buttons.addButton(self.reset, QDialogButtonBox.ButtonRole.ResetRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(520, max(420, self.sizeHint().height()))

    def _follow_default(self, key: str, checked: bool) -> None:
        """While the box is ticked the spin box shows the default and cannot be edited."""
        spin = self.spins[key]
        if checked:
            spin.setValue(getattr(self._defaults, key))
        spin.setEnabled(not checked)

    def apply_preset(self, preset: Preset) -> None:
        """Fill the dialog with a preset: its prompt, its overrides, the app default elsewhere."""
        self.system_prompt.setPlainText(preset.system_prompt)
        self.context_policy.setCurrentIndex(truncation.POLICIES.index(policy_of(preset.sampling)))
        for key, box in self.use_default.items():
            value = preset.sampling.get(key)
            box.setChecked(value is None)
            if value is not None:
                self.spins[key].setValue(value)

    def result(self) -> tuple[str, dict]:  # type: ignore[override]  # QDialog.result() is the exit code
        """(system prompt, sampling dict with only the values this conversation overrides)."""
        sampling: dict = {}
        for key, spin in self.spins.items():
            if not self.use_default[key].isChecked():
                sampling[key] = BY_KEY[key].value(spin)
        policy = self.context_policy.currentData()
        if policy != truncation.DEFAULT_POLICY:
            sampling[POLICY_KEY] = policy
        return self.system_prompt.toPlainText(), sampling
