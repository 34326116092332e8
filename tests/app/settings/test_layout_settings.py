"""The settings room's layout: the Settings dialog fits a 768 px screen (its groups scroll), the
conversation settings dialog keeps its width when a preset is saved, and an unchecked check box
shows in the dark theme."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402
from PySide6.QtWidgets import QCheckBox, QGroupBox, QVBoxLayout, QWidget  # noqa: E402

from app.settings.app_settings import AppSettings  # noqa: E402
from app.settings.conversation_settings import ConversationSettingsDialog  # noqa: E402
from app.settings.dialog import SettingsDialog  # noqa: E402
from app.settings.theme import apply_theme  # noqa: E402
from app.store import Conversation  # noqa: E402

SCREEN = 768
"""A small laptop's screen height; a title bar and a panel take some of it."""


def test_the_settings_dialog_fits_a_768_px_screen_and_scrolls_to_every_group(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(), tmp_path, tray_available=False, shortcut_status="No global shortcut here")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.wait(20)
    assert dialog.height() <= SCREEN - 100 and dialog.minimumSizeHint().height() <= SCREEN - 100
    groups = dialog.findChildren(QGroupBox)
    scroll = dialog.scroll
    assert len(groups) == 6 and all(scroll.widget().isAncestorOf(g) for g in groups)
    scroll.ensureWidgetVisible(dialog.local_server)  # the last group can be reached
    assert dialog.local_server.visibleRegion().boundingRect().height() > 0


def test_saving_a_preset_does_not_widen_the_conversation_settings(qtbot, tmp_path):
    c = Conversation(id=1, title="Plans", created_at=0.0, updated_at=0.0, pinned=False, model=None,
                     system_prompt="Be brief.", sampling={})
    dialog = ConversationSettingsDialog(c, AppSettings(), home=tmp_path)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.wait(20)
    width = dialog.width()
    assert dialog.presets.save_as("Rambler, the one who goes on and on about rivers and levees")
    qtbot.wait(20)
    assert dialog.width() == width
    assert "Rambler" in dialog.presets.message.text() and "Rambler" in dialog.presets.message.toolTip()


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_an_unchecked_box_stands_out_from_the_background(qtbot, qapp, theme):
    old_palette = qapp.palette()
    try:
        apply_theme(qapp, theme, qapp.font().pointSize())
        holder = QWidget()
        QVBoxLayout(holder).addWidget(box := QCheckBox("Keep a copy of attached files"))
        qtbot.addWidget(holder)
        holder.show()
        qtbot.wait(20)
        image = box.grab().toImage()
        background = QColor(image.pixel(image.width() - 2, 2)).lightness()
        indicator = [QColor(image.pixel(x, y)).lightness() for x in range(min(20, image.width()))
                     for y in range(image.height())]
        assert max(abs(v - background) for v in indicator) >= 45  # was 19 in the dark theme (51 in the light one)
    finally:
        qapp.setPalette(old_palette)


def test_a_local_api_that_could_not_start_says_why_within_the_dialog(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(api_server=True), tmp_path, tray_available=False)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    width = dialog.width()
    group = dialog.local_server
    group.show_state("", "Port 8317 is in use by another program, so the local API is off. Port 8318 is "
                         "free: use it in Settings ▸ Local API server.", 8318)
    qtbot.waitUntil(lambda: group.state.isVisible() and group.use_free.isVisible())
    dialog.scroll.ensureWidgetVisible(group.use_free)
    assert dialog.width() == width
    for widget in (group.state, group.use_free):  # wrapped, not past the group's right edge
        assert widget.mapTo(group, widget.rect().topRight()).x() <= group.width()
