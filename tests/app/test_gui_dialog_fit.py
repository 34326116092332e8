"""Dialogs open whole on their parent's screen: wide enough for their title ("Save as preset" was
cut to "Save … preset"), and never with the title bar above the screen (Load model once opened so,
on a screen smaller than the dialog)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtWidgets import QDialog, QInputDialog, QMainWindow  # noqa: E402

from app.dialog_fit import DialogFit, title_width  # noqa: E402


@pytest.fixture
def fitted(qapp):
    """The application's DialogFit, as ConfabApp installs it."""
    fit = DialogFit()
    qapp.installEventFilter(fit)
    yield fit
    qapp.removeEventFilter(fit)


def test_the_save_as_preset_name_dialog_is_wide_enough_for_its_title(qtbot, fitted):
    dialog = QInputDialog()
    dialog.setWindowTitle("Save as preset")
    dialog.setLabelText("Preset name:")
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.width() >= title_width(dialog)


def test_a_dialog_taller_than_the_screen_keeps_its_title_bar_on_it(qtbot, fitted):
    parent = QMainWindow()
    qtbot.addWidget(parent)
    parent.resize(640, 480)
    parent.show()
    area = parent.screen().availableGeometry()
    dialog = QDialog(parent)
    dialog.setWindowTitle("Load model")
    dialog.resize(620, area.height() + 200)  # a small display: the dialog does not fit
    dialog.move(area.left() + 10, area.top() - 300)  # where a window manager once put it
    dialog.show()
    frame = dialog.frameGeometry()
    assert frame.top() >= area.top() and frame.bottom() <= area.bottom()
    assert area.contains(dialog.geometry())

