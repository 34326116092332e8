"""The conversation list and the undo bar, offscreen, fed with records built by hand (no engine)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from datetime import datetime  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402

from app.window.conversation_list import (GENERATING_ROLE, ID_ROLE, KIND_ROLE, SNIPPET_ROLE, ConversationList,  # noqa: E402
                                   date_group)
from app.store import Conversation, SearchHit  # noqa: E402
from app.window.undo_bar import UndoBar  # noqa: E402

NOW = datetime(2026, 3, 10, 0, 5).timestamp()
"""Five minutes past a local midnight: "yesterday" is only minutes ago."""
DAY = 86400.0


def at(*args: int) -> float:
    return datetime(*args).timestamp()


def conv(cid: int, title: str, updated_at: float, pinned: bool = False) -> Conversation:
    return Conversation(id=cid, title=title, created_at=updated_at, updated_at=updated_at, pinned=pinned,
                        model=None, system_prompt="", sampling={})


CONVERSATIONS = [
    conv(1, "Just now", NOW - 60),
    conv(2, "Late last night", at(2026, 3, 9, 23, 55)),
    conv(3, "Old but pinned", NOW - 90 * DAY, pinned=True),
    conv(4, "Last week", NOW - 5 * DAY),
    conv(5, "", NOW - 30 * DAY),
]


@pytest.fixture
def clist(qtbot) -> ConversationList:
    w = ConversationList()
    qtbot.addWidget(w)
    w.resize(260, 500)
    w.show()
    qtbot.waitExposed(w)
    w.set_conversations(CONVERSATIONS, current=None, now=NOW)
    return w


def rows(w: ConversationList) -> list[tuple[str, str]]:
    return [(w.list.item(i).data(KIND_ROLE), w.list.item(i).text()) for i in range(w.list.count())]


def item_of(w: ConversationList, cid: int):
    return next(w.list.item(i) for i in range(w.list.count()) if w.list.item(i).data(ID_ROLE) == cid)


def click(qtbot, w: ConversationList, item) -> None:
    qtbot.mouseClick(w.list.viewport(), Qt.MouseButton.LeftButton, pos=w.list.visualItemRect(item).center())


@pytest.mark.parametrize("updated_at, pinned, group", [
    (at(2026, 3, 10, 0, 1), False, "Today"),               # just after midnight
    (at(2026, 3, 9, 23, 59), False, "Yesterday"),          # minutes ago, but another day
    (at(2026, 3, 9, 0, 0), False, "Yesterday"),
    (at(2026, 3, 8, 23, 59), False, "Previous 7 days"),
    (at(2026, 3, 4, 12, 0), False, "Previous 7 days"),     # 6 days ago
    (at(2026, 3, 3, 12, 0), False, "Previous 7 days"),     # 7 days ago
    (at(2026, 3, 2, 12, 0), False, "Older"),               # 8 days ago
    (at(2020, 1, 1, 12, 0), True, "Pinned"),               # pinned wins over age
    (at(2026, 3, 10, 0, 1), True, "Pinned"),
])
def test_date_group_counts_calendar_days(updated_at, pinned, group):
    assert date_group(updated_at, NOW, pinned) == group


def test_conversations_are_grouped_under_headings_in_order(clist):
    assert rows(clist) == [
        ("heading", "Pinned"), ("conversation", "Old but pinned"),
        ("heading", "Today"), ("conversation", "Just now"),
        ("heading", "Yesterday"), ("conversation", "Late last night"),
        ("heading", "Previous 7 days"), ("conversation", "Last week"),
        ("heading", "Older"), ("conversation", "New conversation"),
    ]
    heading = clist.list.item(0)
    assert not heading.flags() & Qt.ItemFlag.ItemIsSelectable


def test_clicking_selects_and_programmatic_select_is_silent(qtbot, clist):
    picked = []
    clist.selected.connect(picked.append)
    clist.select(4)
    clist.set_conversations(CONVERSATIONS, current=4, now=NOW)
    assert picked == [] and clist.current_id() == 4
    assert clist.list.currentItem().data(ID_ROLE) == 4
    click(qtbot, clist, item_of(clist, 2))
    assert picked == [2] and clist.current_id() == 2
    click(qtbot, clist, clist.list.item(0))  # a heading: nothing happens
    assert picked == [2] and clist.current_id() == 2


def test_rebuilding_keeps_the_scroll_position(qtbot, clist):
    many = [conv(i, f"Chat {i}", NOW - i * 3600) for i in range(1, 80)]
    clist.set_conversations(many, current=3, now=NOW)
    bar = clist.list.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    kept = bar.value()
    clist.set_conversations(many, current=3, now=NOW)
    assert kept > 0 and bar.value() == kept and clist.current_id() == 3


def test_generating_badge_shows_and_clears_without_rebuilding(clist):
    item = item_of(clist, 2)
    clist.set_generating({2})
    assert item_of(clist, 2) is item and item.data(GENERATING_ROLE)
    assert "replying" in item.data(Qt.ItemDataRole.AccessibleTextRole)
    assert not item_of(clist, 1).data(GENERATING_ROLE)
    clist.set_generating(set())
    assert not item.data(GENERATING_ROLE)
    clist.set_generating({1})
    clist.set_conversations(CONVERSATIONS, current=None, now=NOW)  # survives a rebuild
    assert item_of(clist, 1).data(GENERATING_ROLE)


def test_rename_emits_the_clean_title_and_refuses_an_empty_one(qtbot, clist):
    renamed = []
    clist.rename_requested.connect(lambda cid, title: renamed.append((cid, title)))
    assert clist.request_rename(4, "  Trip   plans ")
    assert not clist.request_rename(4, "   ")
    assert renamed == [(4, "Trip plans")]


def test_rename_in_place_with_f2(qtbot, clist):
    renamed = []
    clist.rename_requested.connect(lambda cid, title: renamed.append((cid, title)))
    clist.select(2)
    clist.list.setFocus()
    qtbot.keyClick(clist.list, Qt.Key.Key_F2)
    editor = clist.list.viewport().findChild(QLineEdit)
    assert editor is not None and editor.text() == "Late last night"
    editor.setText("Night thoughts")
    qtbot.keyClick(editor, Qt.Key.Key_Return)  # the delegate commits on the next event loop turn
    qtbot.waitUntil(lambda: bool(renamed))
    assert renamed == [(2, "Night thoughts")]
    assert item_of(clist, 2).text() == "Night thoughts"


def test_delete_key_and_menu_ask_for_the_current_conversation(qtbot, clist):
    deleted, pinned = [], []
    clist.delete_requested.connect(deleted.append)
    clist.pin_requested.connect(lambda cid, on: pinned.append((cid, on)))
    clist.select(4)
    clist.list.setFocus()
    qtbot.keyClick(clist.list, Qt.Key.Key_Delete)
    assert deleted == [4]
    actions = {a.text().split("\t")[0]: a for a in clist.context_menu(3).actions() if a.text()}
    assert set(actions) == {"Rename…", "Unpin", "Delete"}  # conversation 3 is pinned
    actions["Unpin"].trigger()
    actions["Delete"].trigger()
    assert pinned == [(3, False)] and deleted == [4, 3]
    assert "Pin" in [a.text() for a in clist.context_menu(4).actions()]


def test_search_is_debounced_and_clearing_sends_empty(qtbot, clist):
    queries = []
    clist.search_requested.connect(queries.append)
    clist.focus_search()
    assert clist.search.hasFocus()
    with qtbot.waitSignal(clist.search_requested):
        qtbot.keyClicks(clist.search, "cats")
    assert queries == ["cats"]
    qtbot.keyClick(clist.search, Qt.Key.Key_Escape)
    assert clist.search.text() == "" and queries == ["cats", ""]


def test_search_results_show_bold_matches_and_select_on_click(qtbot, clist):
    picked = []
    clist.selected.connect(picked.append)
    clist.search.setText("cat")
    hits = [SearchHit(4, 10, "Last week", "assistant", "a [cat] <b>not bold</b> & more"),
            SearchHit(4, 11, "Last week", "user", "another [cat]"),
            SearchHit(2, 12, "Late last night", "user", "[Cat]alonia")]
    clist.set_search_results("ca", hits)  # late answer to an older query: ignored
    assert ("heading", "Pinned") in rows(clist)
    clist.set_search_results("cat", hits)
    assert rows(clist) == [("hit", "Last week"), ("hit", "Late last night")]
    snippet = clist.list.item(0).data(SNIPPET_ROLE)
    assert snippet == "a <b>cat</b> &lt;b&gt;not bold&lt;/b&gt; &amp; more"
    click(qtbot, clist, clist.list.item(1))
    assert picked == [2]
    clist.search.clear()
    assert ("heading", "Pinned") in rows(clist) and clist.current_id() == 2


def test_search_without_hits_says_so(clist):
    clist.search.setText("zebra")
    clist.set_search_results("zebra", [])
    assert rows(clist) == [("hint", "No conversations match “zebra”")]


def test_controls_have_accessible_names(clist):
    assert clist.list.accessibleName() == "Conversations"
    assert clist.search.accessibleName() == "Search conversations"
    assert clist.new_button.accessibleName() == "New conversation"
    assert clist.search.placeholderText() == "Search conversations (Ctrl+F)"


# -- undo bar --------------------------------------------------------------------------------------
@pytest.fixture
def bar(qtbot) -> UndoBar:
    b = UndoBar()
    qtbot.addWidget(b)
    b.move(600, 600)  # away from the pointer: under it, the countdown pauses (tests/app/window/test_gui_undo.py)
    return b


def test_undo_bar_is_hidden_until_a_message(bar):
    assert bar.isHidden() and not bar.pending()
    bar.show_message("Deleted “Plans”", 7)
    assert not bar.isHidden() and "Plans" in bar.toolTip()
    assert bar.undo_button.accessibleName() == "Undo"


def test_undo_hands_the_token_back(qtbot, bar):
    undone, expired = [], []
    bar.undo.connect(undone.append)
    bar.expired.connect(expired.append)
    bar.show_message("Deleted “Plans”", 7)
    qtbot.mouseClick(bar.undo_button, Qt.MouseButton.LeftButton)
    assert undone == [7] and expired == [] and bar.isHidden()


def test_undo_bar_times_out(qtbot, bar):
    undone = []
    bar.undo.connect(undone.append)
    bar.show_message("Deleted “Plans”", 7, timeout_ms=10)
    with qtbot.waitSignal(bar.expired) as blocker:
        pass
    assert blocker.args == [7] and undone == [] and bar.isHidden()


def test_a_newer_message_expires_the_previous_token_at_once(bar):
    expired = []
    bar.expired.connect(expired.append)
    bar.show_message("Deleted “A”", "a")
    bar.show_message("Deleted “B”", "b")
    assert expired == ["a"] and bar.pending()
    bar.flush()
    assert expired == ["a", "b"] and not bar.pending()
