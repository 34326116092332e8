"""The quick chat and the tray: ask, read the streamed answer, find it in the store, continue."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QSystemTrayIcon

from app.quick.quick_chat import TITLE, QuickChat, place_near
from app.quick.tray import Tray
from tests.app.gui_fixtures import LONG, bridge, gui_engine  # noqa: F401 (fixtures)


@pytest.fixture
def quick(qtbot, bridge) -> QuickChat:
    chat = QuickChat(bridge)
    qtbot.addWidget(chat)
    chat.set_ready(True)
    with qtbot.waitActive(chat):
        chat.show_near(None)
    return chat


def ask(qtbot, chat: QuickChat, text: str) -> int:
    """Type `text`, press Enter, wait for the reply to end; the conversation id."""
    qtbot.keyClicks(chat.input, text)
    with qtbot.waitSignal(chat.reply_finished, timeout=20_000) as blocker:
        qtbot.keyClick(chat.input, Qt.Key.Key_Return)
    return blocker.args[0]


def stored(qtbot, bridge, fn):
    """`fn(store)` run on the store thread; its result."""
    out = []
    bridge.run(fn).success(out.append)
    qtbot.waitUntil(lambda: bool(out), timeout=5_000)
    return out[0]


def test_round_trip_streams_and_stores(qtbot, quick, bridge):
    chunks = []
    quick._on_chunk = _spy(quick._on_chunk, chunks)
    cid = ask(qtbot, quick, "Hello")
    assert len(chunks) > 1  # it streamed, chunk by chunk
    assert quick.reply_text and quick.answer.toPlainText().startswith("Hello")  # question, then answer
    assert quick.input.isEnabled() and not quick.stop_button.isVisible()
    conversation = stored(qtbot, bridge, lambda s: s.get_conversation(cid))
    user, reply = stored(qtbot, bridge, lambda s: s.messages(cid))
    assert conversation.title == TITLE
    assert (user.role, user.content) == ("user", "Hello")
    assert (reply.role, reply.status, reply.content) == ("assistant", "complete", quick.reply_text)


def test_second_question_goes_to_the_same_conversation(qtbot, quick, bridge):
    first = ask(qtbot, quick, "One")
    second = ask(qtbot, quick, "Two")
    assert first == second
    messages = stored(qtbot, bridge, lambda s: s.messages(first))
    assert [(m.role, m.content) for m in messages[::2]] == [("user", "One"), ("user", "Two")]
    assert [m.title for m in stored(qtbot, bridge, lambda s: s.list_conversations())] == [TITLE]


def test_an_existing_quick_chat_conversation_is_reused(qtbot, quick, bridge):
    older = stored(qtbot, bridge, lambda s: s.create_conversation(TITLE).id)
    stored(qtbot, bridge, lambda s: s.create_conversation("Something else"))
    assert ask(qtbot, quick, "Hi") == older


def test_continue_carries_the_conversation_id(qtbot, quick):
    assert not quick.continue_button.isEnabled()  # nothing to continue yet
    cid = ask(qtbot, quick, "Hello")
    with qtbot.waitSignal(quick.continue_requested) as blocker:
        qtbot.mouseClick(quick.continue_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [cid] and not quick.isVisible()


def test_stop_keeps_what_was_said(qtbot, quick, bridge):
    bridge.params = LONG
    qtbot.keyClicks(quick.input, "Tell me a story")
    qtbot.keyClick(quick.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: quick.stop_button.isVisible() and bool(quick.reply_text), timeout=20_000)
    assert not quick.input.isEnabled()
    with qtbot.waitSignal(quick.reply_finished, timeout=20_000) as blocker:
        qtbot.mouseClick(quick.stop_button, Qt.MouseButton.LeftButton)
    reply = stored(qtbot, bridge, lambda s: s.messages(blocker.args[0]))[-1]
    assert reply.status == "cancelled" and reply.content == quick.reply_text
    assert quick.status_label.text() == "Stopped." and not quick.stop_button.isVisible()


def test_not_ready_disables_the_input_with_the_reason(qtbot, quick):
    quick.set_ready(False, "Loading model…")
    assert not quick.input.isEnabled() and quick.input.placeholderText() == "Loading model…"
    assert quick.status_label.text() == "Loading model…"
    quick.set_ready(True)
    assert quick.input.isEnabled() and quick.status_label.text() == ""


def test_escape_hides(qtbot, quick):
    qtbot.keyClick(quick.input, Qt.Key.Key_Escape)
    assert not quick.isVisible()


def test_escape_while_answering_hides_and_the_reply_goes_on(qtbot, quick, bridge):
    qtbot.keyClicks(quick.input, "Hello")
    with qtbot.waitSignal(quick.reply_finished, timeout=20_000) as blocker:
        qtbot.keyClick(quick.input, Qt.Key.Key_Return)
        quick.show_near(None)  # opened again while it answers: the answer has the focus
        assert quick.focusWidget() is quick.answer
        qtbot.keyClick(quick.answer, Qt.Key.Key_Escape)
        assert not quick.isVisible()
    reply = stored(qtbot, bridge, lambda s: s.messages(blocker.args[0]))[-1]
    assert (reply.status, reply.content) == ("complete", quick.reply_text)


SCREEN = QRect(0, 0, 1280, 800)
PANEL = QSize(440, 340)


def test_clicking_elsewhere_hides_unless_a_reply_streams(qtbot, quick, bridge):
    from PySide6.QtWidgets import QWidget

    other = QWidget()
    qtbot.addWidget(other)
    bridge.params = LONG
    qtbot.keyClicks(quick.input, "Tell me a story")
    qtbot.keyClick(quick.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: bool(quick.reply_text), timeout=20_000)
    with qtbot.waitActive(other):
        other.show()
        other.activateWindow()
    assert quick.isVisible() and quick.streaming  # still answering: stays open
    with qtbot.waitSignal(quick.reply_finished, timeout=20_000):
        quick.stop()
    with qtbot.waitActive(quick):
        quick.show_near(None)
    with qtbot.waitActive(other):
        other.activateWindow()
    assert not quick.isVisible()


@pytest.mark.parametrize("icon, where", [
    (QRect(900, 0, 22, 22), "below"),        # a menubar at the top (macOS, GNOME)
    (QRect(1200, 770, 24, 30), "above"),     # a taskbar at the bottom (Windows)
    (QRect(1270, 0, 10, 22), "below"),       # at the very edge: pushed back on screen
    (None, "corner"),                        # unknown: top-right of the screen
    (QRect(), "corner"),
])
def test_placement_stays_on_screen_next_to_the_icon(icon, where):
    top_left = place_near(PANEL, icon, SCREEN)
    panel = QRect(top_left, PANEL)
    assert SCREEN.contains(panel)
    if where == "below":
        assert panel.top() > icon.bottom()
    elif where == "above":
        assert panel.bottom() < icon.top()
    else:
        assert panel.top() - SCREEN.top() < 20 and SCREEN.right() - panel.right() < 20


def test_tray_is_harmless_without_a_system_tray(qtbot, qapp):
    tray = Tray()
    assert tray.visible == Tray.available()
    requested = []
    tray.quick_chat_requested.connect(requested.append)
    with qtbot.waitSignal(tray.open_requested):
        tray.open_action.trigger()
    with qtbot.waitSignal(tray.quit_requested):
        tray.quit_action.trigger()
    tray.quick_chat_action.trigger()
    tray._on_activated(QSystemTrayIcon.ActivationReason.Context)  # the menu, not the quick chat
    assert len(requested) == 1 and isinstance(requested[0], QRect)
    assert [a.text() for a in tray.menu.actions() if a.text()] == ["Quick chat", "Open Confab", "Quit"]


@pytest.mark.skipif(sys.platform == "darwin", reason="a click on a macOS menubar item shows its menu")
def test_tray_click_opens_the_quick_chat(qtbot, quick):
    tray = Tray()
    tray.quick_chat_requested.connect(quick.show_near)
    quick.hide()
    tray._on_activated(QSystemTrayIcon.ActivationReason.Trigger)
    assert quick.isVisible() and quick.focusWidget() is quick.input


def _spy(fn, seen: list):
    def wrapper(chunk):
        seen.append(chunk)
        fn(chunk)
    return wrapper
