"""The main window: conversation list on the left, the chat panel on the right, menus, status bar.

It reaches the store and the engine only through the `Bridge`; every callback it receives runs on
the GUI thread, so nothing here waits on the engine or on the database. Setup is a flat list of
`setup_x()` calls; the window's state moves only through `set_state`.
"""

from __future__ import annotations

from typing import Callable, Literal, Optional

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (QMainWindow, QMessageBox, QProgressBar, QSplitter, QVBoxLayout,
                               QWidget)

from app.bridge import Bridge, Finished
from app.chat.panel import ChatPanel
from app.window.conversation_files import ConversationFiles
from app.window.conversation_list import ConversationList
from app.chat.file_drop import FileDrop
from app.window.model_words import backend_part, backend_part_tip, empty_text
from app.window.status_parts import PartLabel, StatusPart, StatusParts, backend_text, short_address, short_model
from app.error_words import in_words
from app.store import Conversation
from app.window.deletes import DeleteUndo
from app.window.images_part import ImagesLabel
from app.window.load_error import load_error_box
from app.window.message_deletes import MessageDeletes
from app.window.undo_bar import UndoBar
from app.window.status import StatusFigures, StatusNotices

State = Literal["loading", "ready", "failed"]
DEFAULT_SIZE = (1040, 680)
MINIMUM_SIZE = (640, 480)
"""The narrowest and lowest the window goes; every row in it fits down to this (tests/app/*/test_layout_*)."""
LIST_WIDTH = 260
"""The conversation list's width at first start (then the user's, remembered)."""
NOTICE_MS = 5000
"""How long a notice stays (an error: `ERROR_MS`)."""
ERROR_MS = 15000


class MainWindow(QMainWindow):
    """Confab's window. `set_state("ready", ...)` once the bridge has an engine."""

    load_model_requested = Signal()
    connect_requested = Signal()
    """Model ▸ Connect to server…"""
    """The user chose Model ▸ Load model… (the application shows the picker)."""
    get_models_requested = Signal()
    """Model ▸ Get models…, or the link on the first-start page (the application shows the dialog)."""
    settings_requested = Signal()
    """The user chose Settings… (Ctrl+,)."""
    conversation_settings_requested = Signal(int)
    quit_requested = Signal()
    """File ▸ Quit: leave the app, even when closing the window only hides it to the tray."""
    closed = Signal()
    """The window was closed for real (not hidden to the tray): the app quits."""

    def __init__(self, bridge: Bridge, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.state: State = "loading"
        self.hide_on_close = False
        """Closing the window hides it (the tray keeps the app running) instead of quitting."""
        self.last_open_id: Optional[int] = None
        """The conversation open now, or the last one open before an empty page (restored at start)."""
        self.may_close: Callable[[], bool] = lambda: True
        """Asked before the window closes for real (the app asks about replies still running)."""
        self._model_text = "Loading the bundled model…"
        self._demo = True
        self.setup_window()
        self.setup_widgets()
        self.setup_layout()
        self.setup_menus()
        self.setup_status_bar()
        self.setup_bridge()
        self.set_state("loading", "Loading model…")

    # -- setup -------------------------------------------------------------------------------------
    def setup_window(self) -> None:
        self.setWindowTitle("Confab")
        self.setMinimumSize(*MINIMUM_SIZE)
        self.resize(*DEFAULT_SIZE)

    def setup_widgets(self) -> None:
        self.conversation_list = ConversationList()
        self.conversation_list.selected.connect(self.show_conversation)
        self.conversation_list.new_requested.connect(self.new_conversation)
        self.conversation_list.rename_requested.connect(self.rename_conversation)
        self.conversation_list.pin_requested.connect(self.pin_conversation)
        self.conversation_list.delete_requested.connect(self.delete_conversation)
        self.conversation_list.search_requested.connect(self.search)
        self.undo_bar = UndoBar()
        self.deletes = DeleteUndo(self.undo_bar, self._commit_delete, self)
        """Deletes the user can still take back (Edit ▸ Undo), made final at quit."""
        self.deletes.restored.connect(self._undo_delete)
        self.undo_action = self.deletes.action
        self.chat = ChatPanel(self.bridge)
        self.message_deletes = MessageDeletes(self.chat, self.undo_bar, self.bridge, self)
        """One message deleted at a time, Undo in the bar; final at quit."""
        self.chat.conversation_created.connect(self._created)
        self.chat.replies_changed.connect(self._replies_changed)
        self.chat.reply_finished.connect(self._on_finished)
        self.chat.error.connect(self.show_error)
        self.chat.notice.connect(lambda text: self.notices.show(text, NOTICE_MS))
        self.chat.settings_requested.connect(self.conversation_settings_requested)
        self.file_drop = FileDrop(self)  # files dropped anywhere on the window are attached
        self.file_drop.dropped.connect(self.chat.files.tray.add_paths)
        # Short names the tests and the self-test use.
        self.composer = self.chat.composer
        self.chat_view = self.chat.chat_view
        self.send_button, self.stop_button = self.chat.send_button, self.chat.stop_button

    def setup_layout(self) -> None:
        left = QWidget()
        left_box = QVBoxLayout(left)
        left_box.setContentsMargins(6, 6, 0, 6)
        left_box.addWidget(self.conversation_list, stretch=1)
        left_box.addWidget(self.undo_bar)
        self.splitter = QSplitter()
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.chat)
        self.splitter.setStretchFactor(0, 0)  # a resize goes to the chat; the list keeps its width
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([LIST_WIDTH, DEFAULT_SIZE[0] - LIST_WIDTH])
        self.setCentralWidget(self.splitter)

    def setup_menus(self) -> None:
        bar = self.menuBar()
        file_menu = self.file_menu = bar.addMenu("&File")
        self._action(file_menu, "&New conversation", self.new_conversation, QKeySequence.StandardKey.New)
        self._action(file_menu, "&Close conversation", self.close_conversation, QKeySequence("Ctrl+W"))
        file_menu.addSeparator()
        self.setup_conversation_files(file_menu)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.quit_requested.emit, QKeySequence("Ctrl+Q"))
        edit_menu = bar.addMenu("&Edit")
        edit_menu.addActions([self.undo_action, self.message_deletes.action])
        edit_menu.addSeparator()
        self._action(edit_menu, "&Find…", self.conversation_list.focus_search, QKeySequence("Ctrl+F"))
        self._action(edit_menu, "&Settings…", self.settings_requested.emit, QKeySequence("Ctrl+,"))
        chat_menu = bar.addMenu("&Conversation")
        self.stop_action = self._action(chat_menu, "&Stop reply", self.chat.stop, QKeySequence("Esc"))
        self._action(chat_menu, "&Regenerate last reply", self.chat.regenerate)
        self._action(chat_menu, "Conversation &settings…", self._ask_conversation_settings)
        model_menu = self.model_menu = bar.addMenu("&Model")
        self.load_model_action = self._action(model_menu, "&Load model…", self.load_model_requested.emit)
        self.get_models_action = self._action(model_menu, "&Get models…", self.get_models_requested.emit)
        self.connect_action = self._action(model_menu, "&Connect to server…", self.connect_requested.emit)
        self.chat_view.empty_label.linkActivated.connect(lambda _link: self.get_models_requested.emit())

    def setup_conversation_files(self, file_menu) -> None:
        self.files = ConversationFiles(self, self.bridge)
        self.files.exported.connect(lambda path: self.statusBar().showMessage(f"Exported to {path}", 8000))
        self.files.imported.connect(lambda cid: self.refresh_conversations(select=cid))
        self.files.failed.connect(lambda why: self.statusBar().showMessage(why, 8000))
        self.export_action = self._action(file_menu, "&Export…", lambda: self.files.export(self.current_id),
                                          QKeySequence("Ctrl+Shift+E"))
        self.import_action = self._action(file_menu, "&Import JSON…", self.files.import_json)

    def _action(self, menu, text: str, slot, shortcut: Optional[QKeySequence | QKeySequence.StandardKey] = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def setup_status_bar(self) -> None:
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Model load progress")
        self.progress.setRange(0, 100)
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        self.model_label = PartLabel("")
        self.model_label.setAccessibleName("Current model")
        self.backend_label = PartLabel("")
        self.backend_label.setAccessibleName("Backend the model runs on")
        self.images_label = ImagesLabel()
        self.stats_label = PartLabel("")
        self.stats_label.setAccessibleName("Last reply speed")
        self.figures = StatusFigures(self)
        self.figures.setAccessibleName("Conversations in memory and app memory")
        self.stats_label.priority, self.model_label.priority, self.figures.priority = 3, 2, 1  # kept whole longest
        bar = self.statusBar()
        self.notices = StatusNotices(bar)
        """Notices beside the figures: elided to fit, the whole text in a tooltip."""
        self.error_dialog: Optional[QMessageBox] = None
        """The last failed model load's dialog (the whole message), while open."""
        self.parts = StatusParts(bar)
        """Whole texts while they fit, compact ones (details in tooltips) when they do not."""
        bar.addPermanentWidget(self.progress)
        # Each part after a thin line: memory, model and backend never run together.
        for label in (self.stats_label, self.figures, self.model_label, self.images_label, self.backend_label):
            self.add_status_part(label)

    def add_status_part(self, label: PartLabel) -> None:
        """One more part at the right of the status bar (the local API's address, say), after a
        line, shown while it has text, compact with the others when the bar is short of room."""
        if label.shorten is None:
            label.shorten = short_address
        self.statusBar().addPermanentWidget(StatusPart(label))

    def setup_bridge(self) -> None:
        self.bridge.unhandled_error = self.show_error
        self.refresh_conversations()

    # -- state -------------------------------------------------------------------------------------
    def set_state(self, state: State, reason: str = "") -> None:
        """Move the window to `state`; `reason` is shown while the composer is disabled."""
        self.state = state
        self.chat.set_ready(state == "ready", reason)
        self.notices.show(reason, 0 if state != "ready" else NOTICE_MS)
        if state == "ready":
            self.progress.hide()

    def set_model(self, name: str, backend: str, device: str, capacity=None, max_context: int = 0,
                  precision: str = "", precision_reason: str = "", backend_reason: str = "",
                  kernel_warning: str = "", draft_model: str = "", placement: str = "",
                  placement_reason: str = "") -> None:
        """Show the loaded model (its name; then the backend it runs on, the device, the card and the
        layers on it, the precision its weights compute in, and why) and, from then on, its capacity
        and how much of its context (`max_context` tokens) the conversation shown fills."""
        self.chat.context_meter.set_limit(max_context)
        self.setWindowTitle(f"{name} — Confab")  # the same name as the status bar and Load model
        self.model_label.setText(name, short_model(name))
        self.model_label.setToolTip(f"Model: {name}" + (f"\nContext: {max_context:,} tokens" if max_context else ""))
        self.backend_label.setText(*backend_part(backend, device, precision, kernel_warning, draft_model, placement))
        self.backend_label.setToolTip(backend_part_tip(backend, device, precision_reason or precision, backend_reason,
                                                       draft_model, placement_reason))
        self._model_text = f"<b>{name}</b> is loaded and ready ({backend_text(backend, device)})."
        self._demo = "smollm2-135m" in name.lower()
        self.chat_view.set_empty_text(empty_text(self._model_text, self._demo))
        self.figures.set_capacity_source(capacity)

    def set_token_counter(self, count) -> None:
        """The loaded engine's exact token count (`Engine.count_tokens`) for attached files, or None
        where it cannot count (a remote engine): their counts are then estimates, shown with "~"."""
        self.chat.files.tray.set_counter(count)

    def set_images(self, support) -> None:
        """Whether the loaded model sees images (`ImageSupport`): said in the status bar; the
        composer counts images with it, and refuses them for a text model."""
        self.images_label.show_support(support)
        self.chat.files.tray.set_images(support)

    def set_progress(self, fraction: float, message: str) -> None:
        self.progress.show()
        self.progress.setValue(int(fraction * 100))
        self.notices.show(message)

    def show_error(self, error: BaseException | str) -> None:
        """The standard place for a failure nobody else handled: a status notice in words (what
        happened, what to do), elided to fit with the whole sentence in its tooltip, for `ERROR_MS`."""
        self.notices.show(in_words(error).sentence, ERROR_MS)

    def show_load_error(self, title: str, message: str, caption: str = "Could not load the model") -> None:
        """A model that did not load (or, with its `caption`, a part of it: the draft model): a dialog
        with the whole message (it may be long: a path, the engine's reasons), and a short notice in
        the status bar."""
        self.notices.show(title, ERROR_MS)
        if self.error_dialog is not None:
            self.error_dialog.close()
        box = load_error_box(self, title, message, caption)
        box.finished.connect(lambda _result: setattr(self, "error_dialog", None))
        self.error_dialog = box
        box.open()  # window-modal, never blocks the GUI thread

    # -- conversations -----------------------------------------------------------------------------
    def refresh_conversations(self, select: Optional[int] = None, *, passive: bool = False) -> None:
        """Reload the list from the store, then select `select` (default: keep the current one).
        `passive`: not the user's doing (a reply ended); the list keeps still under the pointer."""
        self.bridge.run(lambda store: store.list_conversations()).success(
            lambda conversations: self._show_conversations(conversations, select, passive))

    def _show_conversations(self, conversations: list[Conversation], select: Optional[int],
                            passive: bool = False) -> None:
        deleted = self.deletes.pending()
        conversations = [c for c in conversations if c.id not in deleted]
        wanted = select if select is not None else self.chat.current_id
        if wanted not in {c.id for c in conversations}:
            wanted = None
        self.conversation_list.set_conversations(conversations, wanted, passive=passive)
        self.conversation_list.set_generating(set(self.bridge.replying()))
        if select is not None and select != self.chat.current_id:
            self.show_conversation(select)
        elif self.chat.current_id is None and wanted is None:
            self.chat_view.set_empty_text(empty_text(self._model_text, self._demo))

    def _created(self, conversation_id: int) -> None:
        self.last_open_id = conversation_id
        self.refresh_conversations(select=conversation_id)

    def show_conversation(self, conversation_id: Optional[int]) -> None:
        if conversation_id is not None:
            self.last_open_id = conversation_id
        if self.state == "ready" and conversation_id != self.chat.current_id:
            self.notices.clear()  # a notice was about the conversation left behind
        self.conversation_list.select(conversation_id)
        self.chat.show_conversation(conversation_id)

    @property
    def current_id(self) -> Optional[int]:
        return self.chat.current_id

    def new_conversation(self) -> None:
        """An empty page at once; the conversation is created by its first message, so the list
        never fills with empty "New conversation" entries and typing right away cannot race.
        The focus goes to the composer before the page clears, wherever it was (a message about
        to go away, the list, the search field)."""
        self.composer.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.show_conversation(None)

    def close_conversation(self) -> None:
        """Ctrl+W: leave the conversation (it keeps any running reply) for an empty page."""
        self.new_conversation()

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        self.bridge.run(lambda store: store.rename_conversation(conversation_id, title)).success(
            lambda c: (self.refresh_conversations(),
                       self.chat.title_label.setText(c.title) if c.id == self.chat.current_id else None))

    def pin_conversation(self, conversation_id: int, pinned: bool) -> None:
        self.bridge.run(lambda store: store.set_pinned(conversation_id, pinned)).success(
            lambda _: self.refresh_conversations())

    def delete_conversation(self, conversation_id: int) -> None:
        """Hide it at once and offer Undo (the bar, then Edit ▸ Undo for the session); the store
        deletes it at quit."""
        self.bridge.stop(conversation_id)
        if self.last_open_id == conversation_id:
            self.last_open_id = None
        if self.chat.current_id == conversation_id:
            self.show_conversation(None)
        # Feedback at once: the list knows the title, so no wait behind streaming replies' store work.
        self.deletes.delete(conversation_id, self.conversation_list.title_of(conversation_id))
        self.refresh_conversations()

    def _undo_delete(self, conversation_id: int) -> None:
        self.refresh_conversations(select=conversation_id)

    def _commit_delete(self, conversation_id: int) -> None:
        self.bridge.run(lambda store: store.delete_conversation(conversation_id))

    def commit_pending_deletes(self) -> None:
        """Delete what is still undoable (called before the app quits)."""
        self.deletes.commit_all()
        self.message_deletes.commit_all()

    def search(self, query: str) -> None:
        if not query.strip():
            self.refresh_conversations()
            return
        self.bridge.run(lambda store: store.search(query)).success(
            lambda hits: self.conversation_list.set_search_results(
                query, [h for h in hits if h.conversation_id not in self.deletes.pending()]))

    def _ask_conversation_settings(self) -> None:
        self.chat.ask_settings()

    # -- replies -----------------------------------------------------------------------------------
    def send(self, text: str) -> None:
        """Send `text` in the current conversation (a new one when there is none)."""
        self.chat.send(text)

    def _replies_changed(self) -> None:
        self.conversation_list.set_generating(set(self.bridge.replying()))
        QTimer.singleShot(0, lambda: self.refresh_conversations(passive=True))  # replies move them up

    def _on_finished(self, finished: Finished) -> None:
        s = finished.stats
        if s is not None:
            self.show_speed(s.decode_tok_s, s.ttft_s)
        if finished.finish_reason == "cancelled":
            self.notices.show("Stopped", 3000)

    def show_speed(self, tok_s: float, ttft_s: float) -> None:
        """The last reply's speed in the status bar ("10.5 tok/s", the first token's wait in the tooltip)."""
        self.stats_label.setText(f"{tok_s:.1f} tok/s · TTFT {ttft_s * 1000:.0f} ms", f"{tok_s:.1f} tok/s")
        self.stats_label.setToolTip(f"Last reply: {tok_s:.1f} tokens a second; its first token came "
                                    f"{ttft_s * 1000:.0f} ms after the message was sent")

    # -- closing -----------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt name)
        if self.hide_on_close:
            event.ignore()
            self.hide()
            return
        if not self.may_close():
            event.ignore()
            return
        self.commit_pending_deletes()
        super().closeEvent(event)
        self.closed.emit()
