"""A reply cut because the conversation filled the model's context (issue 38, defect 3), as the
user sees it: the real cause with its numbers, not "Stopped at the 186-token limit", and the
conversation's When too long policy one click away. No engine: messages are made by hand."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import dataclasses  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from app.chat.view import ChatView  # noqa: E402
from app.store import CONTEXT_FULL, ReplyStats  # noqa: E402
from tests.app.chat.test_gui_chat_view import message, views  # noqa: E402


@pytest.fixture
def view(qtbot) -> ChatView:
    v = ChatView()
    qtbot.addWidget(v)
    v.resize(700, 400)
    v.show()
    qtbot.waitExposed(v)
    return v


def _cut(reason: str):
    return dataclasses.replace(message(2, "assistant", "1, 2, 3,"), finish_reason=reason,
                               stats=ReplyStats(prompt_tokens=1862, completion_tokens=186))


def test_a_reply_cut_by_a_full_context_says_so_with_numbers(view):
    view.set_messages(1, [message(1, "user", "Count"), _cut(CONTEXT_FULL)])
    reply = views(view)[1]
    note = reply.note_label.text()
    assert "context is full" in note and "2,048" in note and "186-token limit" not in note
    advice = reply.error_line.text()
    assert not reply.error_line.isHidden()
    assert "1,862" in advice and "186" in advice and "When too long" in advice


def test_a_reply_cut_by_a_full_context_offers_the_when_too_long_policy(view, qtbot):
    view.set_messages(1, [message(1, "user", "Count"), _cut(CONTEXT_FULL)])
    reply = views(view)[1]
    assert not reply.too_long_button.isHidden() and not reply.continue_button.isHidden()
    with qtbot.waitSignal(view.settings_requested, timeout=1000):
        qtbot.mouseClick(reply.too_long_button, Qt.MouseButton.LeftButton)


def test_a_reply_cut_by_max_tokens_keeps_its_note_and_offers_no_policy(view):
    view.set_messages(1, [message(1, "user", "Count"), _cut("length")])
    reply = views(view)[1]
    assert reply.note_label.text() == "Stopped at the 186-token limit"
    assert reply.too_long_button.isHidden() and reply.error_line.isHidden()
