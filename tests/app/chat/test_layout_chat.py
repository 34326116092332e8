"""The chat room's layout: every row of a message (header and buttons, a long error, long words,
four attached files) wraps or elides inside the view, at the default size and at the minimum
width; the file icons are pictures shipped with the app, not emoji a machine may lack."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: E402,F401 (fixtures)
from tests.app.layout_checks import (DEFAULT, LONG_ERROR, MINIMUM, add_conversation,  # noqa: E402
                                     sticking_out)

EMOJI = ("📎", "📄", "📕")


def open_hard_conversation(qtbot, window, size) -> None:
    made = []
    window.bridge.run(lambda store: add_conversation(store, "Hard rows")).success(made.append)
    qtbot.waitUntil(lambda: bool(made), timeout=5_000)
    window.resize(*size)
    window.show_conversation(made[0])
    qtbot.waitUntil(lambda: len(window.chat_view.message_views()) == 4, timeout=5_000)
    qtbot.wait(50)  # layouts settle


@pytest.mark.parametrize("size", [DEFAULT, MINIMUM], ids=["default", "minimum"])
def test_no_part_of_a_message_passes_the_right_edge(qtbot, window, size):
    open_hard_conversation(qtbot, window, size)
    assert window.width() == size[0]
    assert sticking_out(window.chat_view) == []
    bar = window.chat_view.horizontalScrollBar()
    assert bar.maximum() == 0  # nothing wider than the view, hidden or not


def test_a_long_error_wraps_with_its_whole_text_and_the_buttons_stay_in_view(qtbot, window):
    open_hard_conversation(qtbot, window, MINIMUM)
    failed = window.chat_view.message_views()[-1]
    line = failed.error_line  # the error in words; its raw text, whole, behind Details
    line.toggle.setChecked(True)
    qtbot.wait(50)
    assert LONG_ERROR.split(":", 1)[1] in line.details.text().replace("\u200b", "")  # "Class: text"
    assert line.details.height() > 2 * line.details.fontMetrics().height()  # wrapped
    assert sticking_out(window.chat_view) == []
    assert failed.copy_button.isVisible()


def test_four_chips_wrap_onto_more_lines_and_copy_stays(qtbot, window):
    open_hard_conversation(qtbot, window, MINIMUM)
    sent = window.chat_view.message_views()[0]
    chips = sent.files.chips
    assert len(chips) == 4 and len({c.y() for c in chips}) > 1  # more than one line
    assert sent.copy_button.isVisible() and sent.edit_button.isVisible()


def test_going_back_to_the_default_size_lays_the_rows_out_again(qtbot, window):
    open_hard_conversation(qtbot, window, MINIMUM)
    window.resize(*DEFAULT)
    qtbot.wait(50)
    assert sticking_out(window.chat_view) == []


def test_file_icons_are_shipped_pictures_not_emoji(qtbot, window, tmp_path):
    open_hard_conversation(qtbot, window, DEFAULT)
    chips = window.chat_view.message_views()[0].files.chips
    assert all(not c.icon().isNull() and not any(e in c.text() for e in EMOJI) for c in chips)
    button = window.chat.files.button
    assert not button.icon().isNull() and not any(e in button.text() for e in EMOJI)
    note = tmp_path / "notes.md"
    note.write_text("# notes\n")
    window.chat.files.tray.add_paths([note])
    tray = window.chat.files.tray
    qtbot.waitUntil(lambda: tray.drafts and tray.drafts[0].chip.state == "ready", timeout=10_000)
    chip = tray.drafts[0].chip
    assert not chip.icon.pixmap().isNull() and not any(e in chip.label.text() for e in EMOJI)


def test_chips_in_the_composer_wrap_inside_it_at_the_minimum_width(qtbot, window, tmp_path):
    from tests.app.layout_checks import inside

    window.resize(*MINIMUM)
    paths = []
    for name in ("quarterly-financial-report-2026-final-version.md", "river-gauge-measurements.csv",
                 "meeting-notes-from-the-council.md", "analysis_script_for_the_levels.py"):
        paths.append(tmp_path / name)
        paths[-1].write_text("some text\n" * 20)
    tray = window.chat.files.tray
    tray.add_paths(paths)
    qtbot.waitUntil(lambda: len(tray.drafts) == 4 and not tray.reading(), timeout=20_000)
    qtbot.wait(50)
    chips = [d.chip for d in tray.drafts]
    assert len({c.y() for c in chips}) > 1  # more than one line
    right = tray.viewport().width()
    assert all(c.mapTo(tray.viewport(), c.rect().topRight()).x() < right for c in chips)  # none past the edge
    assert inside(chips[0], tray.viewport())  # the first lines show; more lines scroll
