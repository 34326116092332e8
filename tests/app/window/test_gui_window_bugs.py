"""Bugs of the window found by trying it: Ctrl+N right after a first message, switching showing the
old messages under the new header."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.app.gui_fixtures import LONG, bridge, gui_engine, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 30_000


def type_and_enter(qtbot, window, text):
    qtbot.keyClicks(window.composer, text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def titles(window):
    return sorted(title for _, title in window.conversation_list.shown())


def stop_all(qtbot, window):
    for cid in window.bridge.replying():
        window.bridge.stop(cid)
    qtbot.waitUntil(lambda: not window.bridge.replying(), timeout=REPLY_TIMEOUT)


def test_ctrl_n_right_after_a_first_message_opens_a_page_that_takes_a_message(qtbot, window):
    window.bridge.params = LONG
    type_and_enter(qtbot, window, "First chat")
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)  # before it is created
    assert window.current_id is None and window.chat_view.plain_text() == ""
    type_and_enter(qtbot, window, "Second chat")
    assert "Still replying" not in window.statusBar().currentMessage()
    assert window.composer.toPlainText() == ""  # taken, not given back
    qtbot.waitUntil(lambda: titles(window) == ["First chat", "Second chat"], timeout=REPLY_TIMEOUT)
    qtbot.waitUntil(lambda: window.current_id is not None, timeout=5_000)
    current = dict(window.conversation_list.shown())[window.current_id]
    assert current == "Second chat" and window.chat.title_label.text() == "Second chat"
    assert window.chat_view.plain_text().startswith("You\nSecond chat")
    assert window.conversation_list.current_id() == window.current_id
    qtbot.waitUntil(lambda: len(window.bridge.replying()) == 2, timeout=REPLY_TIMEOUT)  # both answered
    stop_all(qtbot, window)


def test_switching_never_shows_the_old_messages_under_the_new_header(qtbot, window):
    for text in ("Apples", "Pears"):
        with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
            type_and_enter(qtbot, window, text)
        qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: titles(window) == ["Apples", "Pears"], timeout=5_000)
    ids = {title: cid for cid, title in window.conversation_list.shown()}
    window.show_conversation(ids["Apples"])
    qtbot.waitUntil(lambda: window.chat.title_label.text() == "Apples", timeout=5_000)
    frames = []
    window.chat.title_label.setText = _recording(window, frames, window.chat.title_label.setText)
    window.show_conversation(ids["Pears"])
    frames.append((window.chat.title_label.text(), window.chat_view.plain_text()))  # before the store answers
    qtbot.waitUntil(lambda: window.chat_view.plain_text().startswith("You\nPears"), timeout=5_000)
    frames.append((window.chat.title_label.text(), window.chat_view.plain_text()))
    for title, text in frames:
        assert "Apples" not in text or title == "Apples", (title, text)
        assert "Pears" not in title or text.startswith("You\nPears"), (title, text)


def _recording(window, frames, set_text):
    def record(text):
        set_text(text)
        frames.append((text, window.chat_view.plain_text()))
    return record
