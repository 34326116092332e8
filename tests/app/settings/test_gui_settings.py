"""Settings dialog, per-conversation settings dialog and theme, driven as a user would."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QPalette  # noqa: E402
from PySide6.QtWidgets import (QAbstractButton, QAbstractSpinBox, QComboBox, QLabel, QLineEdit,  # noqa: E402
                               QPlainTextEdit, QWidget)

from app.settings.conversation_settings import ConversationSettingsDialog  # noqa: E402
from app.settings.app_settings import AppSettings  # noqa: E402
from app.settings.dialog import NO_TRAY_TEXT, SettingsDialog  # noqa: E402
from app.store import Conversation  # noqa: E402
from app.settings.theme import apply_theme  # noqa: E402

CONTROLS = (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QPlainTextEdit)


def conversation(**changes) -> Conversation:
    values = dict(id=1, title="Plans", created_at=0.0, updated_at=0.0, pinned=False, model=None,
                  system_prompt="Be brief.", sampling={})
    values.update(changes)
    return Conversation(**values)


def tick(qtbot, box):
    """Click a check box's indicator, as a user would (a stretched box ignores clicks past its text)."""
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(6, box.height() // 2))


def assert_all_named(widget):
    controls = [w for w in widget.findChildren(QWidget) if isinstance(w, CONTROLS)
                and not isinstance(w.parent(), QAbstractSpinBox)]  # a spin box's own line edit is part of it
    unnamed = [type(w).__name__ for w in controls if not w.accessibleName()]
    assert not unnamed, f"controls without an accessible name: {unnamed}"


def test_settings_dialog_returns_edited_values(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(last_model="/m"), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.font_size.setValue(15)
    dialog.temperature.setValue(0.25)
    dialog.top_p.setValue(0.9)
    dialog.max_tokens.setValue(1500)
    dialog.state_budget.setValue(4096)
    dialog.prefix_cache.setValue(0)
    assert dialog.prefix_cache.text() == "Off"
    tick(qtbot, dialog.close_to_tray)
    result = dialog.result_settings()
    assert result == AppSettings(theme="dark", font_size=15, temperature=0.25, top_p=0.9, max_tokens=1500,
                                 state_budget_mb=4096, prefix_cache_mb=0, close_to_tray=True, last_model="/m")
    assert dialog.data_folder.isReadOnly() and dialog.data_folder.text() == str(tmp_path)
    assert_all_named(dialog)


def test_settings_dialog_shows_current_values(qtbot, tmp_path):
    s = AppSettings(theme="light", font_size=9, temperature=1.5, top_p=0.5, max_tokens=64, state_budget_mb=128,
                    prefix_cache_mb=1024, close_to_tray=True)
    dialog = SettingsDialog(s, tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    assert dialog.result_settings() == s


def test_no_tray_disables_close_to_tray_and_says_why(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(close_to_tray=True), tmp_path, tray_available=False)
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.close_to_tray.isEnabled()
    assert NO_TRAY_TEXT in {label.text() for label in dialog.findChildren(QLabel) if label.isVisible()}
    assert dialog.result_settings().close_to_tray  # an unavailable control keeps the saved choice


@pytest.mark.skipif(sys.platform == "darwin", reason="the option exists on macOS")
def test_menubar_only_is_a_macos_option(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    assert not dialog.menubar_only.isEnabled()


def test_conversation_dialog_overrides_only_what_is_unticked(qtbot):
    defaults = AppSettings(temperature=0.7, top_p=1.0, max_tokens=512)
    dialog = ConversationSettingsDialog(conversation(sampling={"top_p": 0.8}), defaults)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.use_default["temperature"].isChecked()
    assert not dialog.spins["temperature"].isEnabled()
    assert dialog.spins["temperature"].value() == pytest.approx(0.7)
    assert not dialog.use_default["top_p"].isChecked() and dialog.spins["top_p"].value() == pytest.approx(0.8)
    assert "0.7" in dialog.use_default["temperature"].text()
    assert dialog.result() == ("Be brief.", {"top_p": 0.8})

    dialog.system_prompt.setPlainText("Answer in French.")
    tick(qtbot, dialog.use_default["temperature"])
    assert dialog.spins["temperature"].isEnabled()
    dialog.spins["temperature"].setValue(0.2)
    dialog.spins["max_tokens"].setValue(99)  # ignored: still following the default
    assert dialog.result() == ("Answer in French.", {"temperature": 0.2, "top_p": 0.8})
    assert_all_named(dialog)


def test_conversation_dialog_reset_all_uses_defaults(qtbot):
    c = conversation(sampling={"temperature": 0.1, "top_p": 0.5, "max_tokens": 40})
    dialog = ConversationSettingsDialog(c, AppSettings())
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.result()[1] == {"temperature": 0.1, "top_p": 0.5, "max_tokens": 40}
    qtbot.mouseClick(dialog.reset, Qt.MouseButton.LeftButton)
    assert dialog.result()[1] == {}
    assert dialog.spins["max_tokens"].value() == 512


def test_spin_boxes_make_bad_values_impossible(qtbot):
    dialog = ConversationSettingsDialog(conversation(sampling={"temperature": 1.0}), AppSettings())
    qtbot.addWidget(dialog)
    for key in ("temperature", "top_p", "max_tokens"):
        dialog.use_default[key].setChecked(False)
    dialog.spins["temperature"].setValue(9)
    dialog.spins["top_p"].setValue(0)
    dialog.spins["max_tokens"].setValue(10**6)
    assert dialog.result()[1] == {"temperature": 2.0, "top_p": 0.01, "max_tokens": 32768}


@pytest.mark.parametrize("theme, dark", [("light", False), ("dark", True)])
def test_theme_sets_palette_and_font(qapp, theme, dark):
    old_palette, old_font = qapp.palette(), qapp.font()
    try:
        assert apply_theme(qapp, theme, 16) is dark
        window = qapp.palette().color(QPalette.ColorRole.Window)
        assert (window.lightness() < 128) is dark
        assert qapp.font().pointSize() == 16
        assert qapp.style().baseStyle().name().lower() == "fusion"  # under ConfabStyle's outlines
    finally:
        qapp.setPalette(old_palette)
        qapp.setFont(old_font)


def test_system_theme_follows_the_color_scheme(qapp):
    from app.settings.theme import system_is_dark

    old_palette = qapp.palette()
    try:
        assert apply_theme(qapp, "system", 11) is system_is_dark(qapp)
    finally:
        qapp.setPalette(old_palette)


def test_keeping_copies_of_attached_files_is_off_by_default_and_saved(qtbot, tmp_path):
    from app.settings.app_settings import load_settings, save_settings

    assert AppSettings().keep_attachment_files is False
    dialog = SettingsDialog(AppSettings(), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    assert not dialog.keep_attachment_files.isChecked()
    dialog.keep_attachment_files.setChecked(True)
    chosen = dialog.result_settings()
    assert chosen.keep_attachment_files is True
    save_settings(tmp_path, chosen)
    assert load_settings(tmp_path).keep_attachment_files is True


def test_drafting_tokens_ahead_is_on_by_default_and_can_be_turned_off(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.speculative.isChecked()
    tick(qtbot, dialog.speculative)
    assert dialog.result_settings().speculative is False
