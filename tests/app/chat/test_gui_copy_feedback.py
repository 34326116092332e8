"""A code block's Copy link says "Copied ✓" for a moment after a click, then "Copy" again."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.chat.markdown_render import COPIED_TEXT, render_markdown
from tests.app.chat.test_gui_chat_view import CODE_REPLY, conversation, link_point, view, views  # noqa: F401


def test_render_marks_only_the_copied_block():
    html = render_markdown(CODE_REPLY, copied=1)
    assert html.count(COPIED_TEXT) == 1 and html.index("print") < html.index(COPIED_TEXT)
    assert COPIED_TEXT not in render_markdown(CODE_REPLY)


def test_code_block_copy_link_says_copied_then_copy_again(view, qtbot):  # noqa: F811 (fixture)
    view.set_messages(1, conversation("Hi", CODE_REPLY))
    message = views(view)[1]
    body = message.body
    qtbot.waitUntil(lambda: body.anchorAt(link_point(body, "copy-code:1")) == "copy-code:1")
    qtbot.mouseClick(body.viewport(), Qt.MouseButton.LeftButton, pos=link_point(body, "copy-code:1"))
    assert QApplication.clipboard().text() == "echo 2"
    assert body.toPlainText().count(COPIED_TEXT) == 1
    assert body.toPlainText().rindex(COPIED_TEXT) > body.toPlainText().index("print(1)")  # the second block's
    qtbot.waitUntil(lambda: COPIED_TEXT not in body.toPlainText(), timeout=5_000)
    assert body.toPlainText().count("Copy") == 2
