"""New (Ctrl+N, the New button) and Ctrl+W give a blank page wherever the keyboard focus is.

Found by a new user: with the focus in a message of a conversation that is not first in the list,
Ctrl+N opened the first conversation (the message's widgets went away, Qt gave the focus to the
conversation list, and a list receiving the focus makes its first row current), so the next message
went into the wrong conversation. No engine is needed: the conversations are written to the store.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.bridge import Bridge  # noqa: E402

CODE_REPLY = "Here:\n\n```python\nprint('hi')\n```\n\nThat prints hi."


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    """The main window (no model needed) over two stored conversations, "Older" (the second in the
    list, with a code block in its reply) shown, the window active."""
    from app.window.main_window import MainWindow

    monkeypatch.setenv("CONFAB_HOME", str(tmp_path / "home"))
    bridge = Bridge()

    def seed(store):
        ids = {}
        for title in ("Older", "Newer"):  # "Newer" is updated last: first in the list
            c = store.create_conversation(title)
            store.append_message(c.id, "user", f"Question in {title}")
            store.append_message(c.id, "assistant", CODE_REPLY)
            ids[title] = c.id
        return ids

    with qtbot.waitCallback() as seeded:
        bridge.run(seed).success(seeded)
    w = MainWindow(bridge)
    qtbot.addWidget(w)
    w.ids = seeded.args[0]
    with qtbot.waitActive(w):
        w.show()
        w.activateWindow()
    w.set_state("ready", "ready")
    qtbot.waitUntil(lambda: [t for _, t in w.conversation_list.shown()] == ["Newer", "Older"], timeout=5_000)
    w.show_conversation(w.ids["Older"])
    qtbot.waitUntil(lambda: "That prints hi." in w.chat_view.plain_text(), timeout=5_000)
    yield w
    w.close()
    bridge.close()


def settle(qtbot, window):
    """Wait until the store has answered everything asked before (one worker: in order)."""
    with qtbot.waitCallback(timeout=5_000) as done:
        window.bridge.run(lambda store: None).success(done)


def reply_body(window):
    return window.chat_view.message_views()[-1].body


def focus_message_text(qtbot, window):
    reply_body(window).setFocus(Qt.FocusReason.MouseFocusReason)


def focus_copy_link(qtbot, window):
    body = reply_body(window)
    body.setFocus(Qt.FocusReason.MouseFocusReason)
    qtbot.keyClick(body, Qt.Key.Key_Tab)  # a text browser's Tab moves to its next link
    assert body.textCursor().charFormat().anchorHref().startswith("copy-code:")


def focus_list(qtbot, window):
    window.conversation_list.list.setFocus(Qt.FocusReason.MouseFocusReason)


def focus_search(qtbot, window):
    window.conversation_list.focus_search()


def press_ctrl_n(qtbot, window):
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)


def click_new(qtbot, window):
    qtbot.mouseClick(window.conversation_list.new_button, Qt.MouseButton.LeftButton)


def press_ctrl_w(qtbot, window):
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)


def assert_blank_page(window):
    assert window.current_id is None
    assert window.conversation_list.current_id() is None
    assert window.conversation_list.list.currentItem() is None
    assert window.chat_view.plain_text() == ""
    assert QApplication.focusWidget() is window.composer


@pytest.mark.parametrize("focus", [focus_message_text, focus_copy_link, focus_list, focus_search])
@pytest.mark.parametrize("new", [press_ctrl_n, click_new, press_ctrl_w])
def test_new_gives_a_blank_page_wherever_the_focus_is(qtbot, window, focus, new):
    focus(qtbot, window)
    assert QApplication.focusWidget() is not window.composer
    new(qtbot, window)
    settle(qtbot, window)
    assert_blank_page(window)


def test_the_list_taking_the_focus_opens_nothing(qtbot, window):
    window.new_conversation()
    settle(qtbot, window)
    window.conversation_list.list.setFocus(Qt.FocusReason.TabFocusReason)
    settle(qtbot, window)
    assert window.current_id is None and window.conversation_list.list.currentItem() is None
    qtbot.keyClick(window.conversation_list.list, Qt.Key.Key_Down)  # the user's choice does open
    assert window.current_id == window.ids["Newer"]
