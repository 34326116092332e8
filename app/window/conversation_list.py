"""The conversation list on the left of the main window: search, "New", and the conversations
grouped by day (Pinned, Today, Yesterday, Previous 7 days, Older), or the search results.

The widget holds no data of its own beyond what it is given: the main window feeds it records from
the store (`set_conversations`, `set_search_results`) and acts on its request signals (rename, pin,
delete, search). Nothing here touches the store, so nothing here can block the GUI thread.
"""

from __future__ import annotations

import time
from datetime import datetime
from html import escape
from typing import Iterable, Optional

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QLineEdit, QListWidgetItem,
                               QMenu, QToolButton, QToolTip, QVBoxLayout, QWidget)

from app.window.conversation_delegate import (GENERATING_ROLE, ID_ROLE, KIND_ROLE, SNIPPET_ROLE, TITLE_ROLE,
                                       ConversationDelegate)
from app.window.conversation_rows import ConversationRows
from app.chat.markdown_render import plain_title
from app.store import Conversation, SearchHit

GROUPS = ("Pinned", "Today", "Yesterday", "Previous 7 days", "Older")
UNTITLED = "New conversation"
SEARCH_DELAY_MS = 250
def date_group(updated_at: float, now: float, pinned: bool) -> str:
    """The heading a conversation sits under. Days are local calendar days, as a person counts
    them ("yesterday" at 00:05 is five minutes ago... and also 23 hours and 55 minutes ago)."""
    if pinned:
        return "Pinned"
    days = (datetime.fromtimestamp(now).date() - datetime.fromtimestamp(updated_at).date()).days
    if days <= 0:
        return "Today"
    if days == 1:
        return "Yesterday"
    return "Previous 7 days" if days <= 7 else "Older"


def snippet_html(snippet: str, marks: tuple[str, str] = ("[", "]")) -> str:
    """The store's snippet as HTML: text between the marks in bold, everything else escaped."""
    text = " ".join(snippet.split())
    out, bold, i = [], False, 0
    while i <= len(text):
        mark = marks[1] if bold else marks[0]
        j = text.find(mark, i)
        if j < 0:
            out.append(escape(text[i:]))
            break
        out.append(escape(text[i:j]) + ("</b>" if bold else "<b>"))
        bold, i = not bold, j + len(mark)
    return "".join(out) + ("</b>" if bold else "")


class ConversationList(QWidget):
    """Search field, "New" button, and the grouped conversations (or search results)."""

    selected = Signal(object)
    """The user picked a conversation: its id (int), or None. Not emitted for `select()`."""
    new_requested = Signal()
    rename_requested = Signal(int, str)
    """(id, new title): the title is stripped and never empty."""
    pin_requested = Signal(int, bool)
    """(id, pinned): the state the user asked for."""
    delete_requested = Signal(int)
    search_requested = Signal(str)
    """The search text, stripped, ~250 ms after typing stops; "" when the search is cleared."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self._conversations: list[Conversation] = []
        self._pinned: dict[int, bool] = {}
        self._current: Optional[int] = None
        self._generating: set[int] = set()
        self._now: Optional[float] = None
        self._quiet = 0
        """> 0 while the list changes selection itself (no `selected`)."""
        self._last_query = ""
        """The query last sent through `search_requested` ("" when none is active)."""
        self._hovered = False
        self._menu_open = False
        self._deferred = False
        """A passive update arrived while the user was pointing at the list: rebuild when they leave."""
        self.setup_search()
        self.setup_list()
        self.setup_layout()
        self._rebuild_groups()

    # -- setup -------------------------------------------------------------------------------------
    def setup_search(self) -> None:
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search conversations")
        self.search.setToolTip("Search titles and messages (Ctrl+F); Esc clears")
        self.search.textChanged.connect(self._on_search_text)
        self.search.returnPressed.connect(self._emit_search)
        self.search.installEventFilter(self)
        self.search_timer = QTimer(self)
        self.search_timer.setSingleShot(True)
        self.search_timer.setInterval(SEARCH_DELAY_MS)
        self.search_timer.timeout.connect(self._emit_search)
        self.new_button = QToolButton()
        self.new_button.setText("New")
        self.new_button.setAccessibleName("New conversation")
        self.new_button.setToolTip("Start a new conversation (Ctrl+N)")
        self.new_button.clicked.connect(self.new_requested)

    def setup_list(self) -> None:
        self.list = ConversationRows(self)  # taking the focus opens nothing
        self.list.installEventFilter(self)
        self.list.viewport().installEventFilter(self)
        self.list.setAccessibleName("Conversations")
        self.list.setItemDelegate(ConversationDelegate(self))
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._show_menu)
        self.list.currentItemChanged.connect(self._on_current_item)

    def setup_layout(self) -> None:
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.search, stretch=1)
        top.addWidget(self.new_button)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(top)
        box.addWidget(self.list, stretch=1)

    # -- public API --------------------------------------------------------------------------------
    def set_conversations(self, conversations: list[Conversation], current: Optional[int],
                          now: Optional[float] = None, *, passive: bool = False) -> None:
        """Show `conversations` grouped by day with `current` selected; keeps the scroll position.
        While a search is active the new records are kept and shown once it is cleared.
        `passive`: the update comes from no action of the user (a reply finished); while the pointer
        is on the list or its menu is open the rows stay put (a click must land on the row it was
        aimed at), and the list is rebuilt when the pointer leaves or the menu closes."""
        self._conversations = list(conversations)
        self._pinned = {c.id: c.pinned for c in conversations}
        self._current = current if current in self._pinned else None
        self._now = now
        if passive and (self._hovered or self._menu_open):
            self._deferred = True
            return
        if not self.searching():
            self._rebuild_groups()

    def set_search_results(self, query: str, hits: list[SearchHit], marks: tuple[str, str] = ("[", "]")) -> None:
        """Show one item per conversation with its best snippet; ignored when `query` is no longer
        what the search field holds (a late answer to an older query)."""
        if not query or query != self.search_text():
            return
        best: dict[int, SearchHit] = {}
        for hit in hits:
            best.setdefault(hit.conversation_id, hit)
        titles = {c.id: c.title for c in self._conversations}

        def fill() -> None:
            for cid, hit in best.items():
                title = titles.get(cid, hit.title)
                item = self._conversation_item(cid, title, "hit")
                item.setData(SNIPPET_ROLE, snippet_html(hit.snippet, marks))
                plain = " ".join(hit.snippet.replace(marks[0], "").replace(marks[1], "").split())
                item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, plain)
                item.setToolTip(f"{item.text()}\n{plain}")
            if not best:
                self._add_plain(f"No conversations match “{query}”", "hint")

        self._rebuild(fill, keep_scroll=False)

    def set_generating(self, ids: Iterable[int]) -> None:
        """Badge the conversations whose replies are streaming; repaints only what changed."""
        self._generating = set(ids)
        for i in range(self.list.count()):
            item = self.list.item(i)
            cid = self.item_id(item)
            if cid is not None:
                self._mark_generating(item, cid in self._generating)

    def select(self, conversation_id: Optional[int]) -> None:
        """Select `conversation_id` (None: nothing) and scroll it into view; emits nothing."""
        self._current = conversation_id
        item = self._find(conversation_id)
        self._quiet += 1
        try:
            if item is not None:
                self.list.setCurrentItem(item)
            else:
                self.list.setCurrentRow(-1)
                self.list.clearSelection()
        finally:
            self._quiet -= 1
        if item is not None:
            self.list.scrollToItem(item)

    def current_id(self) -> Optional[int]:
        return self._current

    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def searching(self) -> bool:
        return bool(self.search_text())

    def search_text(self) -> str:
        return self.search.text().strip()

    def request_rename(self, conversation_id: int, title: str) -> bool:
        """Ask to rename; an empty title is refused (False) and the old title stays."""
        clean = " ".join(title.split())
        if not clean:
            QToolTip.showText(self.list.mapToGlobal(QPoint(8, 8)), "A title can't be empty", self.list)
            return False
        self.rename_requested.emit(conversation_id, clean)
        return True

    def start_rename(self, conversation_id: int) -> None:
        """Edit the title of `conversation_id` in place (Enter saves, Esc cancels)."""
        item = self._find(conversation_id)
        if item is not None:
            self.list.scrollToItem(item)
            self.list.editItem(item)

    def title_of(self, conversation_id: int) -> Optional[str]:
        """The title the list holds for `conversation_id` ("" untitled; None when it has none)."""
        for c in self._conversations:
            if c.id == conversation_id:
                return c.title
        return None

    def shown(self) -> list[tuple[int, str]]:
        """(id, title as shown) of every conversation row, top to bottom (headings left out)."""
        rows = (self.list.item(i) for i in range(self.list.count()))
        return [(item.data(ID_ROLE), item.text()) for item in rows
                if item.data(KIND_ROLE) in ("conversation", "hit")]

    @staticmethod
    def item_id(item: Optional[QListWidgetItem]) -> Optional[int]:
        return item.data(ID_ROLE) if item is not None else None

    # -- building ----------------------------------------------------------------------------------
    def _rebuild_groups(self) -> None:
        self._deferred = False
        now = self._now if self._now is not None else time.time()
        rank = {name: i for i, name in enumerate(GROUPS)}
        grouped = sorted(((date_group(c.updated_at, now, c.pinned), c) for c in self._conversations),
                         key=lambda gc: (rank[gc[0]], -gc[1].updated_at))

        def fill() -> None:
            heading = None
            for group, c in grouped:
                if group != heading:
                    heading = group
                    self._add_plain(group, "heading")
                self._conversation_item(c.id, c.title, "conversation")
            if not grouped:
                self._add_plain("No conversations yet", "hint")

        self._rebuild(fill, keep_scroll=True)

    def _rebuild(self, fill, keep_scroll: bool) -> None:
        bar = self.list.verticalScrollBar()
        scroll = bar.value()
        previous = self.item_id(self.list.currentItem())
        self._quiet += 1
        try:
            self.list.clear()
            fill()
            item = self._find(self._current)
            if item is not None:
                self.list.setCurrentItem(item)
        finally:
            self._quiet -= 1
        self.list.doItemsLayout()
        bar.setValue(scroll if keep_scroll else 0)
        if item is not None and (previous != self._current or not keep_scroll):
            self.list.scrollToItem(item)

    def _add_plain(self, text: str, kind: str) -> QListWidgetItem:
        item = QListWidgetItem(text, self.list)
        item.setData(KIND_ROLE, kind)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        return item

    def _conversation_item(self, cid: int, title: str, kind: str) -> QListWidgetItem:
        shown = plain_title(title) or UNTITLED  # a title typed as **Markdown** shows without its marks
        item = QListWidgetItem(shown, self.list)
        item.setData(ID_ROLE, cid)
        item.setData(KIND_ROLE, kind)
        item.setData(TITLE_ROLE, title)
        item.setToolTip(shown)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable)
        self._mark_generating(item, cid in self._generating)
        return item

    def _mark_generating(self, item: QListWidgetItem, on: bool) -> None:
        if bool(item.data(GENERATING_ROLE)) == on:
            return
        item.setData(GENERATING_ROLE, on)
        name = plain_title(item.data(TITLE_ROLE) or "") or UNTITLED
        item.setData(Qt.ItemDataRole.AccessibleTextRole, f"{name}, replying" if on else name)

    def _find(self, conversation_id: Optional[int]) -> Optional[QListWidgetItem]:
        if conversation_id is None:
            return None
        for i in range(self.list.count()):
            if self.list.item(i).data(ID_ROLE) == conversation_id:
                return self.list.item(i)
        return None

    # -- user actions ------------------------------------------------------------------------------
    def _on_current_item(self, item: Optional[QListWidgetItem], _previous: object) -> None:
        if self._quiet:
            return
        cid = self.item_id(item)
        if cid != self._current:
            self._current = cid
            self.selected.emit(cid)

    def _show_menu(self, pos: QPoint) -> None:
        cid = self.item_id(self.list.itemAt(pos) or self.list.currentItem())
        if cid is not None:
            menu = self.context_menu(cid)
            self._menu_open = True
            try:
                menu.exec(self.list.viewport().mapToGlobal(pos))
            finally:
                self._menu_open = False
            menu.deleteLater()
            self._catch_up()

    def context_menu(self, conversation_id: int) -> QMenu:
        """Rename…, Pin/Unpin and Delete for one conversation (the item's right-click menu)."""
        pinned = self._pinned.get(conversation_id, False)
        menu = QMenu(self)
        menu.setAccessibleName("Conversation actions")
        menu.addAction("Rename…\tF2", lambda: self.start_rename(conversation_id))
        menu.addAction("Unpin" if pinned else "Pin", lambda: self.pin_requested.emit(conversation_id, not pinned))
        menu.addSeparator()
        menu.addAction("Delete\tDel", lambda: self.delete_requested.emit(conversation_id))
        return menu

    def _on_search_text(self, _text: str) -> None:
        if self.searching():
            self.search_timer.start()
            return
        self.search_timer.stop()
        if self._last_query:
            self._last_query = ""
            self.search_requested.emit("")
        self._rebuild_groups()

    def _emit_search(self) -> None:
        self.search_timer.stop()
        query = self.search_text()
        if query and query != self._last_query:
            self._last_query = query
            self.search_requested.emit(query)

    def _catch_up(self) -> None:
        """Show a deferred passive update now that the user is no longer pointing at the list."""
        if self._deferred and not (self._hovered or self._menu_open) and not self.searching():
            self._rebuild_groups()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        """In the list, F2 renames and Delete deletes. In the search field, Esc clears the search
        (before any window-wide Esc shortcut). The pointer entering or leaving the rows holds or
        releases passive updates."""
        if watched is self.list.viewport() and event.type() in (QEvent.Type.Enter, QEvent.Type.Leave):
            self._hovered = event.type() == QEvent.Type.Enter
            if not self._hovered:
                self._catch_up()
        cid = self.item_id(self.list.currentItem())
        if watched is self.list and event.type() == QEvent.Type.KeyPress and cid is not None:
            if event.key() == Qt.Key.Key_F2:
                self.start_rename(cid)
                return True
            if event.key() == Qt.Key.Key_Delete:
                self.delete_requested.emit(cid)
                return True
        if watched is self.search and event.type() in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            key = event.key()
            if key == Qt.Key.Key_Escape and self.search.text():
                if event.type() == QEvent.Type.KeyPress:
                    self.search.clear()
                event.accept()
                return True
        return super().eventFilter(watched, event)
