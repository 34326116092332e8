"""Per-message control in the window: delete any one message (Undo brings it back, the turns after
it stay), regenerate an earlier reply (a new version; what followed the old one is kept as a
branch) and copy a message as Markdown."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 30_000


def _send_and_wait(qtbot, window, text):  # noqa: F811
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClicks(window.composer, text)
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: _views(window)[-1].shown.id is not None
                    and _views(window)[-1].shown.status != "streaming", timeout=5_000)


def _views(window):  # noqa: F811
    return window.chat_view.message_views()


def _texts(window):  # noqa: F811
    return [v.shown.content for v in _views(window)]


def _two_turns(qtbot, window):  # noqa: F811
    _send_and_wait(qtbot, window, "first")
    _send_and_wait(qtbot, window, "second")
    assert len(_views(window)) == 4


def test_delete_a_middle_message_then_undo(qtbot, window):  # noqa: F811
    _two_turns(qtbot, window)
    before = _texts(window)
    reply = _views(window)[1]
    assert not reply.delete_button.isHidden()
    with qtbot.waitSignal(window.message_deletes.changed, timeout=10_000):
        qtbot.mouseClick(reply.delete_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(_views(window)) == 3, timeout=5_000)
    assert _texts(window) == [before[0], before[2], before[3]]  # the later turns stay
    assert window.undo_bar.isVisibleTo(window) and "Deleted a reply" in window.undo_bar.toolTip()
    with qtbot.waitSignal(window.message_deletes.changed, timeout=10_000):
        qtbot.mouseClick(window.undo_bar.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _texts(window) == before, timeout=5_000)


def test_a_delete_is_final_at_quit_and_what_was_shown_stays(qtbot, window, bridge):  # noqa: F811
    _two_turns(qtbot, window)
    cid = window.chat.current_id
    with qtbot.waitSignal(window.message_deletes.changed, timeout=10_000):
        qtbot.mouseClick(_views(window)[0].delete_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(_views(window)) == 3, timeout=5_000)
    window.undo_bar.flush()  # the bar's offer went: Edit ▸ Undo message delete still brings it back
    assert window.message_deletes.action.isEnabled()
    with qtbot.waitSignal(window.message_deletes.changed, timeout=10_000):
        window.message_deletes.action.trigger()
    qtbot.waitUntil(lambda: len(_views(window)) == 4, timeout=5_000)
    with qtbot.waitSignal(window.message_deletes.changed, timeout=10_000):
        qtbot.mouseClick(_views(window)[0].delete_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(_views(window)) == 3, timeout=5_000)
    _send_and_wait(qtbot, window, "third")  # the model is sent the conversation without it
    assert len(_views(window)) == 5 and _views(window)[-1].shown.status == "complete"
    window.commit_pending_deletes()
    counted = []
    bridge.run(lambda store: store.db.execute("select count(*) from messages where conversation_id = ?",
                                              [cid]).fetchone()[0]).success(counted.append)
    qtbot.waitUntil(lambda: bool(counted), timeout=10_000)
    assert counted == [5]


def test_regenerate_an_earlier_reply_keeps_the_later_turns_as_a_branch(qtbot, window):  # noqa: F811
    _two_turns(qtbot, window)
    before = _texts(window)
    earlier = _views(window)[1]
    assert not earlier.regenerate_button.isHidden()  # not only the last reply
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.mouseClick(earlier.regenerate_button, Qt.MouseButton.LeftButton)
        assert len(_views(window)) == 2 and _views(window)[1].shown.content == ""  # at once
    qtbot.waitUntil(lambda: len(_views(window)) == 2 and _views(window)[1].version_label.text() == "2/2"
                    and _views(window)[1].shown.status != "streaming", timeout=5_000)
    qtbot.mouseClick(_views(window)[1].previous_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _texts(window) == before, timeout=5_000)  # the old branch, whole


def test_copy_puts_the_markdown_source_on_the_clipboard(qtbot, window, bridge):  # noqa: F811
    text = "**Plans**\n\n- one\n- `two`"
    done = []
    bridge.run(lambda store: store.append_message(store.create_conversation("T").id, "user", text)).success(
        done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=10_000)
    window.refresh_conversations(select=done[0].conversation_id)
    qtbot.waitUntil(lambda: len(_views(window)) == 1, timeout=10_000)
    qtbot.mouseClick(_views(window)[0].copy_button, Qt.MouseButton.LeftButton)
    data = QApplication.clipboard().mimeData()
    copied = data.text(), bytes(data.data("text/markdown")).decode("utf-8")
    del data
    QApplication.clipboard().clear()  # Qt's offscreen clipboard crashes at exit if it still holds mime data
    assert copied == (text, text)
