"""The main window: conversation list on the left, the chat panel on the right, menus, status bar.

It reaches the store and the engine only through the `Bridge`; every callback it receives runs on
the GUI thread, so nothing here waits on the engine or on the database. Setup is a flat list of
`setup_x()` calls; the window's state moves only through `set_state`.
"""

from __future__ import annotations

from typing import Literal, Optional

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (QLabel, QMainWindow, QProgressBar, QSplitter, QVBoxLayout, QWidget)

from app.bridge import Bridge, Finished
from app.chat_panel import ChatPanel
from app.conversation_list import ConversationList
from app.store import Conversation
from app.undo_bar import UndoBar
from app.window_status import StatusFigures

State = Literal["loading", "ready", "failed"]
EMPTY_TEXT = (
    "<h2>Welcome to Confab</h2>"
    "<p>Chat with a language model that runs on this computer. Nothing you type leaves it.</p>"
    "<p>{model}</p>"
    "<p style='color: gray'>Type below and press Enter. Ctrl+N starts another conversation; "
    "several can answer at the same time.</p>"
)


class MainWindow(QMainWindow):
    """Confab's window. `set_state("ready", ...)` once the bridge has an engine."""

    load_model_requested = Signal()
    connect_requested = Signal()
    """Model ▸ Connect to server…"""
    """The user chose Model ▸ Load model… (the application shows the picker)."""
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
        self._pending_deletes: set[int] = set()
        self._model_text = "Loading the bundled model…"
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
        self.resize(1040, 680)

    def setup_widgets(self) -> None:
        self.conversation_list = ConversationList()
        self.conversation_list.selected.connect(self.show_conversation)
        self.conversation_list.new_requested.connect(self.new_conversation)
        self.conversation_list.rename_requested.connect(self.rename_conversation)
        self.conversation_list.pin_requested.connect(self.pin_conversation)
        self.conversation_list.delete_requested.connect(self.delete_conversation)
        self.conversation_list.search_requested.connect(self.search)
        self.undo_bar = UndoBar()
        self.undo_bar.undo.connect(self._undo_delete)
        self.undo_bar.expired.connect(self._commit_delete)
        self.chat = ChatPanel(self.bridge)
        self.chat.conversation_created.connect(lambda cid: self.refresh_conversations(select=cid))
        self.chat.replies_changed.connect(self._replies_changed)
        self.chat.reply_finished.connect(self._on_finished)
        self.chat.error.connect(self.show_error)
        self.chat.notice.connect(self.statusBar().showMessage)
        self.chat.settings_requested.connect(self.conversation_settings_requested)
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
        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(self.chat)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([260, 780])
        self.setCentralWidget(splitter)

    def setup_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&New conversation", self.new_conversation, QKeySequence.StandardKey.New)
        self._action(file_menu, "&Close conversation", self.close_conversation, QKeySequence("Ctrl+W"))
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.quit_requested.emit, QKeySequence("Ctrl+Q"))
        edit_menu = bar.addMenu("&Edit")
        self._action(edit_menu, "&Find…", self.conversation_list.focus_search, QKeySequence("Ctrl+F"))
        self._action(edit_menu, "&Settings…", self.settings_requested.emit, QKeySequence("Ctrl+,"))
        chat_menu = bar.addMenu("&Conversation")
        self.stop_action = self._action(chat_menu, "&Stop reply", self.chat.stop, QKeySequence("Esc"))
        self._action(chat_menu, "&Regenerate last reply", self.chat.regenerate)
        self._action(chat_menu, "Conversation &settings…", self._ask_conversation_settings)
        model_menu = bar.addMenu("&Model")
        self.load_model_action = self._action(model_menu, "&Load model…", self.load_model_requested.emit)
        self.connect_action = self._action(model_menu, "&Connect to server…", self.connect_requested.emit)

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
        self.model_label = QLabel("")
        self.model_label.setAccessibleName("Current model")
        self.stats_label = QLabel("")
        self.stats_label.setAccessibleName("Last reply speed")
        self.figures = StatusFigures(self)
        self.figures.setAccessibleName("Sessions and memory")
        bar = self.statusBar()
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.stats_label)
        bar.addPermanentWidget(self.figures)
        bar.addPermanentWidget(self.model_label)

    def setup_bridge(self) -> None:
        self.bridge.unhandled_error = self.show_error
        self.refresh_conversations()

    # -- state -------------------------------------------------------------------------------------
    def set_state(self, state: State, reason: str = "") -> None:
        """Move the window to `state`; `reason` is shown while the composer is disabled."""
        self.state = state
        self.chat.set_ready(state == "ready", reason)
        self.statusBar().showMessage(reason, 0 if state != "ready" else 5000)
        if state == "ready":
            self.progress.hide()

    def set_model(self, name: str, backend: str, device: str, capacity=None) -> None:
        """Show the loaded model (name, backend, device) and, from then on, its capacity."""
        self.model_label.setText(f"{name} · {backend}/{device}")
        self.model_label.setToolTip(f"Model: {name}\nBackend: {backend}\nDevice: {device}")
        self._model_text = f"<b>{name}</b> is loaded and ready ({backend} on {device})."
        self.chat_view.set_empty_text(EMPTY_TEXT.format(model=self._model_text))
        self.figures.set_capacity_source(capacity)

    def set_progress(self, fraction: float, message: str) -> None:
        self.progress.show()
        self.progress.setValue(int(fraction * 100))
        self.statusBar().showMessage(message)

    def show_error(self, error: BaseException | str) -> None:
        """The standard place for a failure nobody else handled: the status bar, kept until replaced."""
        self.statusBar().showMessage(f"Error: {error}")

    # -- conversations -----------------------------------------------------------------------------
    def refresh_conversations(self, select: Optional[int] = None) -> None:
        """Reload the list from the store, then select `select` (default: keep the current one)."""
        self.bridge.run(lambda store: store.list_conversations()).success(
            lambda conversations: self._show_conversations(conversations, select))

    def _show_conversations(self, conversations: list[Conversation], select: Optional[int]) -> None:
        conversations = [c for c in conversations if c.id not in self._pending_deletes]
        wanted = select if select is not None else self.chat.current_id
        if wanted not in {c.id for c in conversations}:
            wanted = None
        self.conversation_list.set_conversations(conversations, wanted)
        self.conversation_list.set_generating(set(self.bridge.replying()))
        if select is not None and select != self.chat.current_id:
            self.show_conversation(select)
        elif self.chat.current_id is None and wanted is None:
            self.chat_view.set_empty_text(EMPTY_TEXT.format(model=self._model_text))

    def show_conversation(self, conversation_id: Optional[int]) -> None:
        self.conversation_list.select(conversation_id)
        self.chat.show_conversation(conversation_id)

    @property
    def current_id(self) -> Optional[int]:
        return self.chat.current_id

    def new_conversation(self) -> None:
        """An empty page at once; the conversation is created by its first message, so the list
        never fills with empty "New conversation" entries and typing right away cannot race."""
        self.show_conversation(None)
        self.composer.setFocus()

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
        """Hide it at once and offer Undo; the store deletes it when the offer expires."""
        self.bridge.stop(conversation_id)
        self._pending_deletes.add(conversation_id)
        if self.chat.current_id == conversation_id:
            self.show_conversation(None)
        self.bridge.run(lambda store: store.get_conversation(conversation_id).title).success(
            lambda title: self.undo_bar.show_message(f"Deleted “{title or 'New conversation'}”", conversation_id))
        self.refresh_conversations()

    def _undo_delete(self, conversation_id: int) -> None:
        self._pending_deletes.discard(conversation_id)
        self.refresh_conversations(select=conversation_id)

    def _commit_delete(self, conversation_id: int) -> None:
        if conversation_id in self._pending_deletes:
            self._pending_deletes.discard(conversation_id)
            self.bridge.run(lambda store: store.delete_conversation(conversation_id))

    def commit_pending_deletes(self) -> None:
        """Delete what is waiting for its Undo to expire (called before the app quits)."""
        self.undo_bar.flush()
        for conversation_id in list(self._pending_deletes):
            self._commit_delete(conversation_id)

    def search(self, query: str) -> None:
        if not query.strip():
            self.refresh_conversations()
            return
        self.bridge.run(lambda store: store.search(query)).success(
            lambda hits: self.conversation_list.set_search_results(
                query, [h for h in hits if h.conversation_id not in self._pending_deletes]))

    def _ask_conversation_settings(self) -> None:
        if self.chat.current_id is not None:
            self.conversation_settings_requested.emit(self.chat.current_id)

    # -- replies -----------------------------------------------------------------------------------
    def send(self, text: str) -> None:
        """Send `text` in the current conversation (a new one when there is none)."""
        self.chat.send(text)

    def _replies_changed(self) -> None:
        self.conversation_list.set_generating(set(self.bridge.replying()))
        QTimer.singleShot(0, self.refresh_conversations)  # replies move conversations up the list

    def _on_finished(self, finished: Finished) -> None:
        s = finished.stats
        if s is not None:
            self.stats_label.setText(f"{s.decode_tok_s:.1f} tok/s · TTFT {s.ttft_s * 1000:.0f} ms")
        if finished.finish_reason == "cancelled":
            self.statusBar().showMessage("Stopped", 3000)

    # -- closing -----------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt name)
        if self.hide_on_close:
            event.ignore()
            self.hide()
            return
        self.commit_pending_deletes()
        super().closeEvent(event)
        self.closed.emit()
