"""The chat view as the user sees it: messages, copy buttons, regenerate and edit, streaming and
scrolling, the empty state. No engine: messages are made by hand."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QTextCursor, QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

import app.chat.message_view as message_view_module  # noqa: E402
from app.chat.view import ChatView, MessageView  # noqa: E402
from app.store import Message  # noqa: E402

CODE_REPLY = "Two ways:\n\n```python\nprint(1)\n```\n\nor\n\n```sh\necho 2\n```\n"


def message(id_: int, role: str, content: str, status: str = "complete", error: str | None = None) -> Message:
    return Message(id=id_, conversation_id=1, position=id_ - 1, role=role, content=content, status=status,
                   token_ids=None, error=error, stats=None, created_at=0.0, updated_at=0.0)


def conversation(*texts: str) -> list[Message]:
    """Alternating user/assistant messages with ids 1, 2, ..."""
    return [message(i + 1, "user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]


@pytest.fixture
def view(qtbot) -> ChatView:
    v = ChatView()
    qtbot.addWidget(v)
    v.resize(600, 400)
    v.show()
    qtbot.waitExposed(v)
    return v


def views(view: ChatView) -> list[MessageView]:
    return view.message_views()


def link_point(body, href: str) -> QPoint:
    """Where the link `href` is drawn in a message body's viewport (between two of its letters)."""
    doc = body.document()
    cursor = QTextCursor(doc)
    inside = []
    for position in range(1, doc.characterCount()):
        cursor.setPosition(position)
        if cursor.charFormat().anchorHref() == href:  # the character before `position`
            inside.append(position)
    assert len(inside) > 2, f"no link {href}"
    cursor.setPosition(inside[len(inside) // 2])
    return body.cursorRect(cursor).center()


def test_messages_are_shown_with_roles_and_status_notes(view):
    view.set_messages(1, [message(1, "system", "Be brief."), message(2, "user", "Hi **there**"),
                          message(3, "assistant", "Hello", "cancelled"), message(4, "user", "More"),
                          message(5, "assistant", "Half", "interrupted"), message(6, "user", "Again"),
                          message(7, "assistant", "", "error", error="out of memory")])
    assert view.conversation_id == 1
    assert view.plain_text() == ("System\nBe brief.\n\nYou\nHi **there**\n\nAssistant\nHello (stopped)\n\n"
                                 "You\nMore\n\nAssistant\nHalf (interrupted)\n\nYou\nAgain\n\n"
                                 "Assistant\n (failed: out of memory)")
    shown = views(view)
    assert "Hi there" in shown[1].body.toPlainText()  # Markdown rendered, not shown raw
    assert [v.note_label.text() for v in shown if not v.note_label.isHidden()] == [
        "Stopped", "Interrupted", "Failed"]
    assert [v.error_line.text() for v in shown if not v.error_line.isHidden()] == ["Out of memory."]
    assert not view.empty_label.isVisible()


def test_empty_state_shows_a_friendly_text(view):
    assert view.empty_label.isVisible() and view.plain_text() == ""
    view.set_empty_text("<b>Say hello</b>")
    view.set_messages(2, conversation("Hi", "Hello"))
    assert not view.empty_label.isVisible()
    view.set_messages(3, [])
    assert view.empty_label.isVisible() and view.empty_label.text() == "<b>Say hello</b>"
    assert view.conversation_id == 3 and view.plain_text() == ""


def test_copy_button_copies_the_raw_markdown(view, qtbot):
    view.set_messages(1, conversation("Hi", CODE_REPLY))
    qtbot.mouseClick(views(view)[1].copy_button, Qt.MouseButton.LeftButton)
    assert QApplication.clipboard().text() == CODE_REPLY


def test_code_block_copy_link_copies_only_that_code(view, qtbot):
    view.set_messages(1, conversation("Hi", CODE_REPLY))
    body = views(view)[1].body
    for href, code in (("copy-code:1", "echo 2"), ("copy-code:0", "print(1)")):
        qtbot.waitUntil(lambda href=href: body.anchorAt(link_point(body, href)) == href)  # laid out
        point = link_point(body, href)
        qtbot.mouseClick(body.viewport(), Qt.MouseButton.LeftButton, pos=point)
        assert QApplication.clipboard().text() == code


def test_regenerate_on_every_stored_reply(view, qtbot):
    view.set_messages(1, conversation("a", "b", "c", "d"))
    shown = [not v.regenerate_button.isHidden() for v in views(view)]
    assert shown == [False, True, False, True]
    with qtbot.waitSignal(view.regenerate_requested, timeout=1000) as asked:
        qtbot.mouseClick(views(view)[1].regenerate_button, Qt.MouseButton.LeftButton)
    assert asked.args == [views(view)[1].shown.id]
    view.add_pending("user", "e")
    view.add_pending("assistant", "")  # still being written: nothing to regenerate yet
    assert views(view)[-1].regenerate_button.isHidden() and views(view)[-1].delete_button.isHidden()


def test_edit_sends_the_new_text_for_that_message(view, qtbot):
    view.set_messages(1, conversation("first", "reply", "second", "reply 2"))
    assert [not v.edit_button.isHidden() for v in views(view)] == [True, False, True, False]
    first = views(view)[0]
    qtbot.mouseClick(first.edit_button, Qt.MouseButton.LeftButton)
    assert first.editor is not None and first.body.isHidden()
    assert first.editor.text.toPlainText() == "first"
    first.editor.text.setPlainText("first, better")
    with qtbot.waitSignal(view.edit_requested, timeout=1000) as signal:
        qtbot.mouseClick(first.editor.send_button, Qt.MouseButton.LeftButton)
    assert signal.args == [1, "first, better"]
    assert first.editor is None and not first.body.isHidden()


def test_cancelling_an_edit_keeps_the_message(view, qtbot):
    view.set_messages(1, conversation("first", "reply"))
    first = views(view)[0]
    qtbot.mouseClick(first.edit_button, Qt.MouseButton.LeftButton)
    first.editor.text.setPlainText("changed")
    with qtbot.assertNotEmitted(view.edit_requested):
        qtbot.keyClick(first.editor.text, Qt.Key.Key_Escape)
    assert first.editor is None and view.plain_text().startswith("You\nfirst\n")


def test_ctrl_enter_sends_an_edit(view, qtbot):
    view.set_messages(1, conversation("first", "reply"))
    first = views(view)[0]
    qtbot.mouseClick(first.edit_button, Qt.MouseButton.LeftButton)
    first.editor.text.setPlainText("again")
    with qtbot.waitSignal(view.edit_requested, timeout=1000) as signal:
        qtbot.keyClick(first.editor.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert signal.args == [1, "again"]


def test_busy_disables_regenerate_and_edit(view):
    view.set_messages(1, conversation("q", "a"))
    view.set_busy(True)
    assert not views(view)[0].edit_button.isEnabled() and not views(view)[1].regenerate_button.isEnabled()
    view.add_pending("user", "new")
    assert not views(view)[2].copy_button.isHidden()
    view.set_busy(False)
    assert views(view)[0].edit_button.isEnabled() and views(view)[1].regenerate_button.isEnabled()


def test_streaming_appends_to_the_last_message_only(view, qtbot, monkeypatch):
    view.set_messages(1, conversation("q", "a"))
    rendered: list[str] = []
    real = message_view_module.render_markdown
    monkeypatch.setattr(message_view_module, "render_markdown", lambda text, **kw: (rendered.append(text),
                                                                                 real(text, **kw))[1])
    view.add_pending("user", "Tell me more")
    view.add_pending("assistant", "")
    for chunk in ("Sure", ", here ", "is **more**."):
        view.append_to_last(chunk)
    assert view.plain_text().endswith("You\nTell me more\n\nAssistant\nSure, here is **more**.")
    qtbot.waitUntil(lambda: views(view)[-1].body.toPlainText() == "Sure, here is more.")
    assert set(rendered) <= {"Tell me more", "", "Sure", "Sure, here ", "Sure, here is **more**."}
    assert rendered.count("q") == rendered.count("a") == 0  # earlier messages never re-rendered


def test_refresh_with_unchanged_messages_rebuilds_nothing(view, monkeypatch):
    messages = conversation("q", "a", "q2", "a2")
    view.set_messages(1, messages)
    before = views(view)
    calls = []
    monkeypatch.setattr(message_view_module, "render_markdown", lambda text, **kw: calls.append(text) or "")
    view.set_messages(1, messages[:3] + [message(4, "assistant", "a2 final", "complete")])
    assert views(view) == before and calls == ["a2 final"]


def test_a_finished_reply_replaces_the_pending_messages_in_place(view):
    view.set_messages(1, conversation("q", "a"))
    view.add_pending("user", "q2")
    view.add_pending("assistant", "")
    view.append_to_last("a2")
    pending = views(view)
    view.set_messages(1, conversation("q", "a", "q2", "a2"))
    assert views(view) == pending
    assert not pending[2].edit_button.isHidden()  # now stored, so it can be edited
    assert view.plain_text() == "You\nq\n\nAssistant\na\n\nYou\nq2\n\nAssistant\na2"


def test_a_refresh_mid_reply_keeps_the_text_streamed_so_far(view):
    view.add_pending("user", "q")
    view.add_pending("assistant", "")
    view.append_to_last("Hello wor")
    view.set_messages(1, [message(1, "user", "q"), message(2, "assistant", "Hello", "streaming")])
    assert view.plain_text() == "You\nq\n\nAssistant\nHello wor"
    view.set_messages(1, [message(1, "user", "q"), message(2, "assistant", "Hello world")])
    assert view.plain_text() == "You\nq\n\nAssistant\nHello world"


def long_conversation() -> list[Message]:
    return conversation(*[f"Message {i}\n\n" + "Some words to fill the line. " * 12 for i in range(8)])


def test_streaming_keeps_a_scrolled_up_position(view, qtbot):
    view.set_messages(1, long_conversation())
    view.add_pending("user", "next")
    view.add_pending("assistant", "")
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 300 and bar.value() == bar.maximum())
    bar.setValue(120)  # the user scrolls up to read
    top = bar.maximum()
    for i in range(40):
        view.append_to_last(f"line {i} of a long streamed reply\n\n")
    qtbot.waitUntil(lambda: bar.maximum() > top + 300)
    assert bar.value() == 120


def test_streaming_stays_pinned_to_the_bottom(view, qtbot):
    view.set_messages(1, long_conversation())
    view.add_pending("user", "next")
    view.add_pending("assistant", "")
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 300 and bar.value() == bar.maximum())
    top = bar.maximum()
    for i in range(40):
        view.append_to_last(f"line {i} of a long streamed reply\n\n")
    qtbot.waitUntil(lambda: bar.maximum() > top + 300)
    assert bar.value() == bar.maximum()


def test_another_conversation_opens_at_the_bottom(view, qtbot):
    view.set_messages(1, long_conversation())
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 300)
    bar.setValue(0)
    view.set_messages(2, long_conversation()[:-1])
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() and bar.maximum() > 0)


def test_the_wheel_over_a_message_scrolls_the_conversation(view, qtbot):
    view.set_messages(1, long_conversation())
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 300)
    bar.setValue(0)
    body = views(view)[0].body
    wheel = QWheelEvent(QPointF(20, 10), QPointF(body.viewport().mapToGlobal(QPoint(20, 10))), QPoint(),
                        QPoint(0, -120), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(body.viewport(), wheel)
    assert bar.value() > 0


def test_dark_mode_re_renders_code_in_dark_colors(view):
    view.set_messages(1, conversation("q", CODE_REPLY))
    view.set_dark(True)
    assert "#0d1117" in views(view)[1].body.toHtml().lower()
    view.add_pending("assistant", "```\nx\n```")
    assert "#0d1117" in views(view)[-1].body.toHtml().lower()


def test_message_text_follows_a_theme_switch(view, qapp):
    # A style sheet on the message bodies once froze their palette: after switching to dark, the
    # text stayed dark grey on the dark background.
    from PySide6.QtGui import QPalette

    from app.settings.theme import apply_theme

    view.set_messages(1, conversation("Hi", "Hello"))
    try:
        for theme in ("light", "dark"):
            dark = apply_theme(qapp, theme, 11)
            view.set_dark(dark)
            qapp.processEvents()
            text = qapp.palette().color(QPalette.ColorRole.Text)
            assert all(v.body.palette().color(QPalette.ColorRole.Text) == text for v in views(view))
    finally:
        apply_theme(qapp, "light", 11)


def test_a_failed_reply_says_why_in_words_with_the_raw_error_behind_details(view):
    raw = ("ServerUnreachableError: connection refused: nothing listens at 127.0.0.1:8799 "
           "(is the server running?)")
    view.set_messages(1, [message(1, "user", "Hi"), message(2, "assistant", "", "error", error=raw)])
    reply = views(view)[1]
    line = reply.error_line
    assert reply.note_label.text() == "Failed" and not line.isHidden()
    assert line.text() == "Nothing answers at 127.0.0.1:8799. Start the server there, or check the address and port."
    assert "Error" not in line.text() and line.details.isHidden() and not line.toggle.isHidden()
    line.toggle.click()
    assert not line.details.isHidden() and line.details.text().replace("\u200b", "") == raw
    line.toggle.click()
    assert line.details.isHidden()


def test_a_message_going_away_with_the_focus_leaves_it_in_the_view(qtbot):
    """Qt would pass the focus of a hidden widget along the tab chain (to the conversation list in
    the window, which then opened its first conversation): the view keeps it instead."""
    from PySide6.QtWidgets import QLineEdit, QVBoxLayout, QWidget

    window = QWidget()
    qtbot.addWidget(window)
    box = QVBoxLayout(window)
    other = QLineEdit()  # before the view in the tab chain, as the list is in the main window
    view = ChatView()
    box.addWidget(other)
    box.addWidget(view)
    window.resize(600, 400)
    with qtbot.waitActive(window):
        window.show()
        window.activateWindow()
    view.set_messages(1, conversation("Question", CODE_REPLY))
    views(view)[-1].body.setFocus(Qt.FocusReason.MouseFocusReason)
    assert QApplication.focusWidget() is views(view)[-1].body
    view.set_messages(2, conversation("Another question"))
    assert QApplication.focusWidget() is view
