"""The conversation list keeps still under the pointer: a reply finishing elsewhere (a passive
update) reorders it only once the pointer leaves, so a click lands on the row it was aimed at."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QEnterEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.window.conversation_list import ConversationList  # noqa: E402
from app.store import Conversation  # noqa: E402
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: E402,F401 (fixtures)

NOW = 1_800_000_000.0
REPLY_TIMEOUT = 30_000


def conv(cid, title, updated_at):
    return Conversation(id=cid, title=title, created_at=updated_at, updated_at=updated_at, pinned=False,
                        model=None, system_prompt="", sampling={})


def titles(w: ConversationList) -> list[str]:
    return [title for _, title in w.shown()]


def hover(w: ConversationList, inside: bool) -> None:
    viewport = w.list.viewport()
    event = QEnterEvent(QPointF(5, 5), QPointF(5, 5), QPointF(5, 5)) if inside else QEvent(QEvent.Type.Leave)
    QApplication.sendEvent(viewport, event)


def test_a_passive_update_waits_for_the_pointer_to_leave(qtbot):
    w = ConversationList()
    qtbot.addWidget(w)
    w.show()
    w.set_conversations([conv(1, "Older", NOW - 60), conv(2, "Newer", NOW - 30)], current=1, now=NOW)
    assert titles(w) == ["Newer", "Older"]
    hover(w, True)
    w.set_conversations([conv(1, "Older", NOW), conv(2, "Newer", NOW - 30)], current=1, now=NOW, passive=True)
    assert titles(w) == ["Newer", "Older"]  # a reply in "Older" finished: the rows stay put
    hover(w, False)
    assert titles(w) == ["Older", "Newer"]
    assert w.current_id() == 1


def test_the_users_own_change_shows_at_once_even_under_the_pointer(qtbot):
    w = ConversationList()
    qtbot.addWidget(w)
    w.show()
    w.set_conversations([conv(1, "Keep", NOW - 60), conv(2, "Delete me", NOW - 30)], current=None, now=NOW)
    hover(w, True)
    w.set_conversations([conv(1, "Keep", NOW - 60)], current=None, now=NOW)  # e.g. after Del
    assert titles(w) == ["Keep"]


def test_a_reply_finishing_does_not_reorder_the_hovered_list(qtbot, window):
    for text in ("Alpha", "Beta"):
        with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
            qtbot.keyClicks(window.composer, text)
            qtbot.keyClick(window.composer, Qt.Key.Key_Return)
        window.new_conversation()
    qtbot.waitUntil(lambda: titles(window.conversation_list) == ["Beta", "Alpha"], timeout=5_000)
    alpha = dict((t, c) for c, t in window.conversation_list.shown())["Alpha"]
    window.show_conversation(alpha)
    qtbot.waitUntil(lambda: window.chat.title_label.text() == "Alpha", timeout=5_000)
    hover(window.conversation_list, True)
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClicks(window.composer, "More")
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    newest = lambda: max(window.conversation_list._conversations, key=lambda c: c.updated_at).title  # noqa: E731
    qtbot.waitUntil(lambda: newest() == "Alpha", timeout=5_000)  # the list has heard of the reply
    assert titles(window.conversation_list) == ["Beta", "Alpha"]
    hover(window.conversation_list, False)
    assert titles(window.conversation_list) == ["Alpha", "Beta"]
