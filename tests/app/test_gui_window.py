"""The main window, offscreen on a tiny model: send, stream, stop, two conversations, loading."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.store import open_store
from tests.app.gui_fixtures import LONG, bridge, gui_engine, window  # noqa: F401 (fixtures)


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


def test_loading_disables_the_composer_with_a_reason(qtbot, bridge):
    from app.main_window import MainWindow

    w = MainWindow(bridge)
    qtbot.addWidget(w)
    assert w.state == "loading" and not w.composer.isEnabled()
    assert w.composer.placeholderText() == "Loading model…" == w.statusBar().currentMessage()
    w.set_state("ready", "Model ready")
    assert w.composer.isEnabled() and w.send_button.isEnabled()


def test_send_streams_into_the_view_and_the_store(qtbot, window, tmp_path):
    type_and_enter(qtbot, window, "Hello there")
    assert window.composer.toPlainText() == ""
    qtbot.waitUntil(lambda: window.conversation_list.count() == 1, timeout=5_000)
    qtbot.waitUntil(lambda: not window.bridge.replying() and window.stats_label.text() != "", timeout=20_000)
    window.bridge.close()
    (title, messages), = stored(tmp_path / "home").items()
    assert title == "Hello there" and window.conversation_list.item(0).text() == "Hello there"
    assert [(r, s) for r, s, _ in messages] == [("user", "complete"), ("assistant", "complete")]
    reply = messages[1][2]
    assert reply and window.chat_view.toPlainText() == f"You\nHello there\n\nAssistant\n{reply}"
    assert "tok/s" in window.stats_label.text() and "TTFT" in window.stats_label.text()


def test_shift_enter_adds_a_line(qtbot, window):
    qtbot.keyClicks(window.composer, "a")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.composer, "b")
    assert window.composer.toPlainText() == "a\nb" and not window.bridge.replying()


def test_escape_stops_and_the_reply_is_stored_cancelled(qtbot, window, tmp_path):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "Long one")
    qtbot.waitUntil(lambda: bool(window.streaming.get(window.current_id)), timeout=20_000)
    assert window.stop_button.isEnabled()
    qtbot.keyClick(window.composer, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.bridge.replying(), timeout=20_000)
    qtbot.waitUntil(lambda: "(stopped)" in window.chat_view.toPlainText(), timeout=5_000)
    assert not window.stop_button.isEnabled()
    window.bridge.close()
    (_, messages), = stored(tmp_path / "home").items()
    assert messages[1][:2] == ("assistant", "cancelled") and messages[1][2]


def test_two_conversations_stream_while_switching(qtbot, window, tmp_path):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "First")
    qtbot.waitUntil(lambda: window.conversation_list.count() == 1, timeout=5_000)
    first = window.current_id
    qtbot.mouseClick(window.new_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.conversation_list.count() == 2 and window.current_id != first, timeout=5_000)
    type_and_enter(qtbot, window, "Second")
    second = window.current_id
    qtbot.waitUntil(lambda: sorted(window.bridge.replying()) == sorted([first, second])
                    and len(window.streaming.get(second, "")) > 0, timeout=20_000)
    # switch back while both stream: the first one's text so far shows, and keeps growing
    row = next(i for i in range(2) if window.conversation_list.item(i).data(Qt.ItemDataRole.UserRole) == first)
    window.conversation_list.setCurrentRow(row)
    qtbot.waitUntil(lambda: window.chat_view.toPlainText().startswith("You\nFirst"), timeout=5_000)
    shown = len(window.chat_view.toPlainText())
    qtbot.waitUntil(lambda: len(window.chat_view.toPlainText()) > shown, timeout=10_000)
    window.bridge.stop(first), window.bridge.stop(second)
    qtbot.waitUntil(lambda: not window.bridge.replying(), timeout=20_000)
    window.bridge.close()
    saved = stored(tmp_path / "home")
    assert set(saved) == {"First", "Second"}
    for title, messages in saved.items():
        assert messages[0] == ("user", "complete", title) and messages[1][1] == "cancelled"
