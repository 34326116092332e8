"""The main window, offscreen on a tiny model: send, stream, stop, regenerate, edit, two
conversations at once, delete and undo, search, keyboard, quitting mid-reply."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.store import open_store
from tests.app.gui_fixtures import LONG, bridge, gui_engine, pace, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 30_000


def stored(home):
    """{title: [(role, status, content)]} of every conversation, through a fresh store."""
    opened = open_store(home)
    try:
        s = opened.store
        return {c.title: [(m.role, m.status, m.content) for m in s.messages(c.id)]
                for c in s.list_conversations()}
    finally:
        opened.store.close()


def type_and_enter(qtbot, window, text):
    qtbot.keyClicks(window.composer, text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def titles(window):
    return [title for _, title in window.conversation_list.shown()]


def wait_idle(qtbot, window):
    qtbot.waitUntil(lambda: not window.bridge.replying(), timeout=REPLY_TIMEOUT)


def send_and_wait(qtbot, window, text):
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        type_and_enter(qtbot, window, text)
    qtbot.waitUntil(lambda: "Assistant" in window.chat_view.plain_text(), timeout=5_000)


def test_loading_disables_the_composer_with_a_reason(qtbot, bridge):
    from app.window.main_window import MainWindow

    w = MainWindow(bridge)
    qtbot.addWidget(w)
    assert w.state == "loading" and not w.composer.isEnabled()
    assert w.composer.placeholderText() == "Loading model…" == w.statusBar().currentMessage()
    w.set_state("ready", "Model ready")
    assert w.composer.isEnabled() and w.send_button.isEnabled()


def test_send_streams_into_the_view_and_the_store(qtbot, window, tmp_path):
    type_and_enter(qtbot, window, "Hello there")
    assert window.composer.toPlainText() == ""
    qtbot.waitUntil(lambda: titles(window) == ["Hello there"], timeout=5_000)
    qtbot.waitUntil(lambda: not window.bridge.replying() and window.stats_label.text() != "", timeout=REPLY_TIMEOUT)
    # The finished reply is re-read from the store (with how it ended) one store round trip later.
    qtbot.waitUntil(lambda: window.chat_view.plain_text().endswith("limit)"), timeout=10_000)
    window.bridge.close()
    (title, messages), = stored(tmp_path / "home").items()
    assert title == "Hello there"
    assert [(r, s) for r, s, _ in messages] == [("user", "complete"), ("assistant", "complete")]
    reply = messages[1][2]
    # The tiny model's reply runs to the 12-token limit, and the view says so.
    expected = f"You\nHello there\n\nAssistant\n{reply} (stopped at the 12-token limit)"
    assert reply and window.chat_view.plain_text() == expected
    assert "tok/s" in window.stats_label.text() and "TTFT" in window.stats_label.text()


def test_shift_enter_adds_a_line(qtbot, window):
    qtbot.keyClicks(window.composer, "a")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.composer, "b")
    assert window.composer.toPlainText() == "a\nb" and not window.bridge.replying()


def test_escape_stops_and_the_reply_is_stored_cancelled(qtbot, window, tmp_path):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "Long one")
    qtbot.waitUntil(lambda: bool(window.chat.streaming.get(window.current_id)), timeout=REPLY_TIMEOUT)
    assert window.stop_button.isEnabled()
    qtbot.keyClick(window.composer, Qt.Key.Key_Escape)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: "(stopped)" in window.chat_view.plain_text(), timeout=5_000)
    assert not window.stop_button.isEnabled()
    window.bridge.close()
    (_, messages), = stored(tmp_path / "home").items()
    assert messages[1][:2] == ("assistant", "cancelled") and messages[1][2]


def test_regenerate_replaces_the_last_reply(qtbot, window, tmp_path):
    send_and_wait(qtbot, window, "Hello")
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        window.chat.regenerate()
    window.bridge.close()
    (_, messages), = stored(tmp_path / "home").items()
    assert [(r, s) for r, s, _ in messages] == [("user", "complete"), ("assistant", "complete")]


def test_edit_and_resend_continues_from_the_edited_message(qtbot, window, tmp_path):
    send_and_wait(qtbot, window, "First question")
    send_and_wait(qtbot, window, "Second question")
    first_user = next(v for v in window.chat_view.message_views() if v.shown.role == "user")
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        window.chat_view.edit_requested.emit(first_user.shown.id, "Edited question")
    qtbot.waitUntil(lambda: window.chat_view.plain_text().startswith("You\nEdited question"), timeout=5_000)
    window.bridge.close()
    (_, messages), = stored(tmp_path / "home").items()
    assert [(r, s, c if r == "user" else "") for r, s, c in messages] == [
        ("user", "complete", "Edited question"), ("assistant", "complete", "")]


def test_two_conversations_stream_while_switching(qtbot, window, gui_engine, tmp_path, monkeypatch):
    window.bridge.params = LONG
    pace(monkeypatch, gui_engine)  # both replies outlast the switch: the first one ended before its stop once
    type_and_enter(qtbot, window, "First")
    qtbot.waitUntil(lambda: titles(window) == ["First"], timeout=5_000)
    first = window.current_id
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert window.current_id is None and window.chat_view.plain_text() == ""
    type_and_enter(qtbot, window, "Second")
    qtbot.waitUntil(lambda: len(titles(window)) == 2 and window.current_id not in (None, first), timeout=5_000)
    second = window.current_id
    qtbot.waitUntil(lambda: sorted(window.bridge.replying()) == sorted([first, second])
                    and len(window.chat.streaming.get(second, "")) > 0, timeout=REPLY_TIMEOUT)
    # switch back while both stream: the first one's text so far shows, and keeps growing
    window.show_conversation(first)
    qtbot.waitUntil(lambda: window.chat_view.plain_text().startswith("You\nFirst"), timeout=5_000)
    shown = len(window.chat_view.plain_text())
    qtbot.waitUntil(lambda: len(window.chat_view.plain_text()) > shown, timeout=10_000)
    window.bridge.stop(first), window.bridge.stop(second)
    wait_idle(qtbot, window)
    window.bridge.close()
    saved = stored(tmp_path / "home")
    assert set(saved) == {"First", "Second"}
    for title, messages in saved.items():
        assert messages[0] == ("user", "complete", title) and messages[1][1] == "cancelled"


def test_delete_can_be_undone_and_otherwise_deletes(qtbot, window, tmp_path):
    send_and_wait(qtbot, window, "Keep me")
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    send_and_wait(qtbot, window, "Delete me")
    qtbot.waitUntil(lambda: sorted(titles(window)) == ["Delete me", "Keep me"], timeout=5_000)
    doomed = window.current_id
    window.conversation_list.delete_requested.emit(doomed)
    qtbot.waitUntil(lambda: titles(window) == ["Keep me"] and window.undo_bar.pending(), timeout=5_000)
    window.undo_bar.trigger_undo()
    qtbot.waitUntil(lambda: sorted(titles(window)) == ["Delete me", "Keep me"], timeout=5_000)
    window.conversation_list.delete_requested.emit(doomed)
    qtbot.waitUntil(lambda: window.undo_bar.pending(), timeout=5_000)
    window.undo_bar.flush()  # the bar goes; Edit ▸ Undo still could bring it back
    assert window.undo_action.isEnabled()
    window.commit_pending_deletes()  # quitting: now it is deleted for real
    window.bridge.close()
    assert set(stored(tmp_path / "home")) == {"Keep me"}


def test_search_finds_an_old_message(qtbot, window):
    send_and_wait(qtbot, window, "Tell me about platypuses")
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    send_and_wait(qtbot, window, "Something else")
    qtbot.waitUntil(lambda: len(titles(window)) == 2, timeout=5_000)
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.conversation_list.search.hasFocus()
    qtbot.keyClicks(window.conversation_list.search, "platyp")
    qtbot.waitUntil(lambda: titles(window) == ["Tell me about platypuses"], timeout=5_000)


def test_ctrl_w_leaves_the_conversation_and_its_reply_goes_on(qtbot, window):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "Keep talking")
    qtbot.waitUntil(lambda: bool(window.bridge.replying()), timeout=5_000)
    cid = window.current_id
    qtbot.keyClick(window, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert window.current_id is None and window.bridge.replying() == [cid]
    window.bridge.stop(cid)
    wait_idle(qtbot, window)


def test_closing_mid_reply_stores_it_interrupted(qtbot, window, tmp_path):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "Never finish")
    qtbot.waitUntil(lambda: len(window.chat.streaming.get(window.current_id) or "") > 0, timeout=REPLY_TIMEOUT)
    window.bridge.close()  # what quitting does
    (_, messages), = stored(tmp_path / "home").items()
    assert messages[1][:2] == ("assistant", "interrupted") and messages[1][2]


def test_every_control_has_an_accessible_name(window):
    from PySide6.QtWidgets import QAbstractButton, QLineEdit, QPlainTextEdit

    controls = window.findChildren(QAbstractButton) + window.findChildren(QLineEdit) + window.findChildren(QPlainTextEdit)
    unnamed = [c for c in controls if c.isVisibleTo(window) and not (c.accessibleName() or c.text() if hasattr(c, "text") else c.accessibleName())]
    assert unnamed == []


def test_a_second_message_before_the_first_conversation_exists_makes_no_second_one(qtbot, window, tmp_path):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "First words")
    type_and_enter(qtbot, window, "Second words")  # before the store has created the conversation
    assert "Still replying here" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: bool(window.bridge.replying()), timeout=5_000)
    window.bridge.stop(window.current_id)
    wait_idle(qtbot, window)
    assert titles(window) == ["First words"]
    assert window.composer.toPlainText() == "Second words"  # not sent, and not lost either


def test_a_message_refused_while_a_reply_runs_stays_in_the_composer(qtbot, window):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "Keep talking")
    qtbot.waitUntil(lambda: bool(window.bridge.replying()), timeout=5_000)
    type_and_enter(qtbot, window, "Too soon")
    assert window.composer.toPlainText() == "Too soon"
    window.bridge.stop(window.current_id)
    wait_idle(qtbot, window)
