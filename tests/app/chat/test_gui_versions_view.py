"""The chat view's versions, Continue and model name, as the user sees them. No engine: messages
are made by hand."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import dataclasses  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from app.chat.view import ChatView  # noqa: E402
from app.store import ReplyStats  # noqa: E402
from tests.app.chat.test_gui_chat_view import conversation, message, views  # noqa: E402


@pytest.fixture
def view(qtbot) -> ChatView:
    v = ChatView()
    qtbot.addWidget(v)
    v.resize(700, 400)
    v.show()
    qtbot.waitExposed(v)
    return v


def _shown(widget) -> bool:
    return not widget.isHidden()


def test_a_message_with_versions_shows_which_and_moves_between_them(view, qtbot):
    msgs = conversation("Tell a story", "Once upon a time")
    msgs[1] = dataclasses.replace(msgs[1], version=2, versions=3)
    view.set_messages(1, msgs)
    user, reply = views(view)
    assert not _shown(user.version_label) and not _shown(user.previous_button)
    assert _shown(reply.version_label) and reply.version_label.text() == "2/3"
    with qtbot.waitSignal(view.version_requested, timeout=1000) as signal:
        qtbot.mouseClick(reply.previous_button, Qt.MouseButton.LeftButton)
    assert signal.args == [2, -1]
    with qtbot.waitSignal(view.version_requested, timeout=1000) as signal:
        qtbot.mouseClick(reply.next_button, Qt.MouseButton.LeftButton)
    assert signal.args == [2, 1]
    view.set_busy(True)
    assert not reply.previous_button.isEnabled() and not reply.next_button.isEnabled()


def test_the_first_and_last_versions_disable_the_way_past_the_end(view):
    msgs = conversation("Hi", "Hello")
    view.set_messages(1, [msgs[0], dataclasses.replace(msgs[1], version=1, versions=2)])
    reply = views(view)[1]
    assert (reply.previous_button.isEnabled(), reply.next_button.isEnabled()) == (False, True)


@pytest.mark.parametrize("status, reason, note", [
    ("complete", "length", "Stopped at the 512-token limit"),
    ("cancelled", "cancelled", "Stopped"),
    ("interrupted", None, "Interrupted"),
])
def test_a_cut_reply_says_why_and_offers_continue(view, qtbot, status, reason, note):
    cut = dataclasses.replace(message(2, "assistant", "1, 2, 3,", status), finish_reason=reason,
                              stats=ReplyStats(completion_tokens=512))
    view.set_messages(1, [message(1, "user", "Count"), cut])
    reply = views(view)[1]
    assert reply.note_label.text() == note and _shown(reply.note_label)
    assert _shown(reply.continue_button)
    with qtbot.waitSignal(view.continue_requested, timeout=1000) as signal:
        qtbot.mouseClick(reply.continue_button, Qt.MouseButton.LeftButton)
    assert signal.args == [2]


def test_a_reply_that_ended_on_its_own_offers_no_continue(view):
    done = dataclasses.replace(message(2, "assistant", "Done."), finish_reason="stop")
    view.set_messages(1, [message(1, "user", "Hi"), done])
    reply = views(view)[1]
    assert not _shown(reply.continue_button) and not _shown(reply.note_label)


def test_only_the_last_reply_offers_continue(view):
    cut = dataclasses.replace(message(2, "assistant", "1, 2,", "cancelled"), finish_reason="cancelled")
    view.set_messages(1, [message(1, "user", "Count"), cut, message(3, "user", "go on")])
    assert not _shown(views(view)[1].continue_button)


def test_each_reply_shows_the_model_that_wrote_it(view):
    reply = dataclasses.replace(message(2, "assistant", "Hello"), model="SmolLM2-135M-Instruct")
    view.set_messages(1, [message(1, "user", "Hi"), reply])
    user, shown = views(view)
    assert shown.model_label.text() == "SmolLM2-135M-Instruct" and _shown(shown.model_label)
    assert not _shown(user.model_label)


def test_regenerate_shows_the_new_version_empty_at_once(view):
    stopped = message(2, "assistant", "Once upon a", "cancelled")
    view.set_messages(1, [message(1, "user", "Tell a story"), stopped])
    view.begin_regenerate()
    reply = views(view)[1]
    assert reply.shown.content == "" and not _shown(reply.note_label)  # no old "Stopped" either
    view.append_to_last("Once upon a")
    view.append_to_last(" time")
    assert reply.shown.content == "Once upon a time"
    # The store's row of the new version arrives: the streamed text stays, nothing is glued on.
    view.set_messages(1, [message(1, "user", "Tell a story"), message(3, "assistant", "Once", "streaming")])
    assert views(view)[1].shown.content == "Once upon a time"


def test_edit_shows_the_new_text_and_drops_what_followed_at_once(view):
    view.set_messages(1, conversation("first", "one", "second", "two"))
    view.begin_edit(1, "first, better")
    shown = views(view)
    assert [v.shown.content for v in shown] == ["first, better", ""]
    assert shown[1].shown.status == "streaming"


def test_continue_streams_onto_the_same_reply(view):
    cut = dataclasses.replace(message(2, "assistant", "1, 2,", "cancelled"), finish_reason="cancelled")
    view.set_messages(1, [message(1, "user", "Count"), cut])
    view.begin_continue()
    view.append_to_last(" 3")
    reply = views(view)[1]
    assert reply.shown.content == "1, 2, 3" and not _shown(reply.continue_button)


def test_regenerate_after_a_user_message_adds_the_reply_placeholder(view):
    view.set_messages(1, [message(1, "user", "Hi")])
    view.begin_regenerate()
    view.append_to_last("Hello")
    assert [(v.shown.role, v.shown.content) for v in views(view)] == [("user", "Hi"), ("assistant", "Hello")]
