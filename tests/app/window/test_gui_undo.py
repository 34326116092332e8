"""Delete's Undo works every time it is shown: the bar appears at once, and its countdown never
runs out under the user's pointer or a held-down Undo button."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QEvent, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QEnterEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.window.undo_bar import MIN_AFTER_LEAVE_MS, UndoBar  # noqa: E402
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: E402,F401 (fixtures)


@pytest.fixture
def bar(qtbot) -> UndoBar:
    b = UndoBar()
    qtbot.addWidget(b)
    b.show()
    return b


def test_undo_held_down_as_the_offer_expires_still_undoes(qtbot, bar):
    undone, expired = [], []
    bar.undo.connect(undone.append)
    bar.expired.connect(expired.append)
    bar.show_message("Deleted “Plans”", 7, timeout_ms=1)
    qtbot.mousePress(bar.undo_button, Qt.MouseButton.LeftButton)
    qtbot.wait(30)  # the countdown would have run out while the button is down
    qtbot.mouseRelease(bar.undo_button, Qt.MouseButton.LeftButton)
    assert undone == [7] and expired == [] and bar.isHidden()


def test_pointer_on_the_bar_pauses_the_countdown_and_leaving_leaves_time_to_come_back(qtbot, bar):
    bar.show_message("Deleted “Plans”", 7, timeout_ms=8000)
    QApplication.sendEvent(bar, QEnterEvent(QPointF(5, 5), QPointF(5, 5), QPointF(5, 5)))
    assert not bar.timer.isActive() and bar.pending()
    QApplication.sendEvent(bar, QEvent(QEvent.Type.Leave))
    # Restarted at MIN_AFTER_LEAVE_MS, not the 8 s it had: a coarse timer may report up to 5% more.
    assert bar.timer.isActive() and bar.timer.remainingTime() <= MIN_AFTER_LEAVE_MS * 1.05
    assert MIN_AFTER_LEAVE_MS >= 2000


def test_delete_shows_undo_at_once_without_waiting_for_the_store(qtbot, window):
    done = []
    window.bridge.run(lambda store: store.create_conversation("Plans")).success(done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=5_000)
    window.refresh_conversations()
    qtbot.waitUntil(lambda: [t for _, t in window.conversation_list.shown()] == ["Plans"], timeout=5_000)
    window.conversation_list.delete_requested.emit(done[0].id)
    assert window.undo_bar.pending() and "Plans" in window.undo_bar.toolTip()  # no store round trip
    window.undo_bar.trigger_undo()
    qtbot.waitUntil(lambda: [t for _, t in window.conversation_list.shown()] == ["Plans"], timeout=5_000)


def _made(qtbot, window, *titles_):
    made = []
    for title in titles_:
        window.bridge.run(lambda store, t=title: store.create_conversation(t)).success(made.append)
    qtbot.waitUntil(lambda: len(made) == len(titles_), timeout=5_000)
    window.refresh_conversations()
    qtbot.waitUntil(lambda: sorted(t for _, t in window.conversation_list.shown()) == sorted(titles_), timeout=5_000)
    return {c.title: c.id for c in made}


def _shown(window):
    return sorted(t for _, t in window.conversation_list.shown())


def test_deletes_stay_undoable_from_the_edit_menu_after_the_bar_goes(qtbot, window):
    ids = _made(qtbot, window, "Plans", "Recipes", "Notes")
    assert not window.undo_action.isEnabled()
    window.conversation_list.delete_requested.emit(ids["Plans"])
    window.conversation_list.delete_requested.emit(ids["Recipes"])
    window.undo_bar.flush()  # the bar ran out
    assert window.undo_bar.isHidden()
    qtbot.waitUntil(lambda: _shown(window) == ["Notes"], timeout=5_000)
    assert window.undo_action.isEnabled() and "Recipes" in window.undo_action.text()
    window.undo_action.trigger()  # the last delete first
    qtbot.waitUntil(lambda: _shown(window) == ["Notes", "Recipes"], timeout=5_000)
    assert "Plans" in window.undo_action.text()
    window.undo_action.trigger()
    qtbot.waitUntil(lambda: _shown(window) == ["Notes", "Plans", "Recipes"], timeout=5_000)
    assert not window.undo_action.isEnabled()


def test_ctrl_z_undoes_the_last_delete_while_the_list_has_focus(qtbot, window):
    from PySide6.QtCore import Qt

    ids = _made(qtbot, window, "Plans")
    window.conversation_list.delete_requested.emit(ids["Plans"])
    window.undo_bar.flush()
    qtbot.waitUntil(lambda: _shown(window) == [], timeout=5_000)
    window.conversation_list.setFocus()
    qtbot.keyClick(window.conversation_list, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: _shown(window) == ["Plans"], timeout=5_000)


def test_undone_deletes_are_never_deleted_and_the_rest_are_at_quit(qtbot, window):
    ids = _made(qtbot, window, "Plans", "Recipes")
    window.conversation_list.delete_requested.emit(ids["Plans"])
    window.conversation_list.delete_requested.emit(ids["Recipes"])
    window.undo_action.trigger()  # Recipes back
    window.commit_pending_deletes()  # quitting
    left = []
    window.bridge.run(lambda store: [c.title for c in store.list_conversations()]).success(left.append)
    qtbot.waitUntil(lambda: bool(left), timeout=5_000)
    assert left[0] == ["Recipes"]
