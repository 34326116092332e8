"""The quick chat: a small frameless panel by the tray icon with one question line and its answer.

    quick = QuickChat(bridge)
    tray.quick_chat_requested.connect(quick.show_near)
    quick.continue_requested.connect(window.open_conversation)
    quick.reply_finished.connect(window.refresh_conversations)
    quick.set_ready(False, "Loading model…")      # until the engine is attached

Its exchanges are an ordinary conversation titled "Quick chat" (the most recent one with that exact
title, created when there is none), so the main window lists it and can continue it. It reaches the
store and the engine only through the Bridge; nothing here waits on either. Files dropped on the
panel, or pasted into its question line (a copied image too), are attached to the next question
(chips above the line).
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QKeyEvent, QKeySequence, QPalette, QTextDocument
from PySide6.QtWidgets import (QApplication, QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QTextBrowser, QToolButton, QVBoxLayout, QWidget)

from app.chat.attachment_tray import AttachmentTray
from app.bridge import Bridge, Finished, Send
from app.chat.composer_files import REPLY_ROOM
from app.chat.file_drop import FileDrop, local_files, pasted_image
from app.chat.markdown_render import code_blocks, copy_index, render_markdown
from app.chat.prefill_progress import progress_text
from app.resources import ui_pixmap
from app.store import Conversation, Store
from engine import Chunk

TITLE = "Quick chat"
"""Title of the store conversation the quick chat writes to."""
SIZE = QSize(440, 340)
MARGIN = 8
PAPERCLIP_URL = "confab-icon:paperclip"
"""The question's file icon, a resource of the answer's document."""
"""Pixels kept between the panel and the tray icon or the screen's edge."""
SAFE_SCHEMES = ("http", "https", "mailto")
"""Links in an answer that a click opens."""
THEME_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
PANEL_STYLE = """
QFrame#quickChatPanel { background: palette(window); border: 1px solid palette(mid); border-radius: 12px; }
QTextBrowser#quickChatAnswer { border: none; background: transparent; }
"""


def find_or_create(store: Store) -> Conversation:
    """The most recently updated conversation titled exactly `TITLE`, else a new one (store thread)."""
    mine = [c for c in store.list_conversations() if c.title == TITLE]
    if mine:
        return max(mine, key=lambda c: (c.updated_at, c.id))
    return store.create_conversation(TITLE)


def place_near(size: QSize, icon: QRect | None, screen: QRect) -> QPoint:
    """Top-left corner for a panel of `size`: centred under the tray icon when the icon is in the
    top half of `screen` (a menubar), above it otherwise (a taskbar); the screen's top-right
    corner when the icon's place is unknown. Always inside `screen`."""
    if icon is None or not icon.isValid() or icon.isEmpty():
        x, y = screen.right() + 1 - MARGIN - size.width(), screen.top() + MARGIN
    else:
        x = icon.center().x() - size.width() // 2
        if icon.center().y() < screen.center().y():
            y = icon.bottom() + 1 + MARGIN
        else:
            y = icon.top() - MARGIN - size.height()
    x = max(screen.left() + MARGIN, min(x, screen.right() + 1 - MARGIN - size.width()))
    y = max(screen.top() + MARGIN, min(y, screen.bottom() + 1 - MARGIN - size.height()))
    return QPoint(x, y)


class QuickChat(QWidget):
    """Ask, read the streamed answer, continue in the main window. Esc or clicking elsewhere hides
    it (a streaming reply keeps it open when it loses focus, and keeps streaming when hidden)."""

    continue_requested = Signal(int)
    """The quick chat conversation's id, for the main window to show."""
    reply_finished = Signal(int)
    """A reply ended (complete, stopped or failed): the conversation changed in the store."""
    conversation_started = Signal(int)
    """A question went to this conversation (maybe just created): the window's list shows it now."""

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint
                         | Qt.WindowType.WindowStaysOnTopHint)
        self.bridge = bridge
        self.conversation_id: int | None = None
        """The conversation the last question went to (None before the first one)."""
        self.question = ""
        self.question_files: tuple[str, ...] = ()
        """Names of the files sent with the question (shown before it, each after a paperclip)."""
        self.reply_text = ""
        """The answer as streamed so far (raw Markdown)."""
        self.ready = False
        self.reason = ""
        self._send: Send | None = None
        self._asking = False  # from Enter until the reply ends (finding the conversation included)
        self._stop_early = False
        self._restyling = False
        self.context_limit = 0
        """The model's context in tokens (0: unknown), so a file too big for it is caught here."""
        self.setup_window()
        self.setup_widgets()
        self.setup_layout()
        self.set_ready(False, "Loading model…")

    # -- setup -------------------------------------------------------------------------------------
    def setup_window(self) -> None:
        self.setWindowTitle("Confab quick chat")
        self.setAccessibleName("Quick chat")
        self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)  # the panel draws round corners
        self.setStyleSheet(PANEL_STYLE)
        self.resize(SIZE)

    def setup_widgets(self) -> None:
        self.title_label = QLabel(f"<b>{TITLE}</b>")
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setAccessibleName("Close quick chat")
        self.close_button.setToolTip("Close (Esc)")
        self.close_button.clicked.connect(self.hide)
        self.input = QLineEdit()
        self.input.setAccessibleName("Quick question")
        self.input.setClearButtonEnabled(True)
        self.input.returnPressed.connect(self.send)
        font = self.input.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)  # the one thing to type in: easy to read
        self.input.setFont(font)
        self.input.setMinimumHeight(32)
        self.input.installEventFilter(self)  # Ctrl+V of files attaches them
        self.files = AttachmentTray()
        self.files.room = lambda: (self.context_limit - min(REPLY_ROOM, self.context_limit // 4)
                                   if self.context_limit > 0 else None)
        self.files.context = lambda: self.context_limit or None
        self.file_drop = FileDrop(self)
        self.file_drop.dropped.connect(self.files.add_paths)
        self.answer = QTextBrowser()
        self.answer.setObjectName("quickChatAnswer")
        self.answer.setAccessibleName("Answer")
        self.answer.setOpenLinks(False)
        self.answer.anchorClicked.connect(self._on_link)
        self.answer.setPlaceholderText("The answer appears here.")
        self.status_label = QLabel("")
        self.status_label.setAccessibleName("Quick chat status")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setAccessibleName("Stop the answer")
        self.stop_button.setToolTip("Stop the answer; what was said is kept")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.hide()
        self.continue_button = QPushButton("Continue in Confab")
        self.continue_button.setAccessibleName("Continue in Confab")
        self.continue_button.setToolTip("Open this conversation in the Confab window")
        self.continue_button.clicked.connect(self.continue_in_confab)
        self.continue_button.setEnabled(False)

    def setup_layout(self) -> None:
        self.panel = QFrame(self)
        self.panel.setObjectName("quickChatPanel")
        header = QHBoxLayout()
        header.addWidget(self.title_label)
        header.addStretch()
        header.addWidget(self.close_button)
        footer = QHBoxLayout()
        footer.addWidget(self.status_label, stretch=1)
        footer.addWidget(self.stop_button)
        footer.addWidget(self.continue_button)
        box = QVBoxLayout(self.panel)
        box.setContentsMargins(12, 8, 12, 10)
        box.addLayout(header)
        box.addWidget(self.files)
        box.addWidget(self.input)
        box.addWidget(self.answer, stretch=1)
        box.addLayout(footer)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.panel)

    # -- state -------------------------------------------------------------------------------------
    @property
    def streaming(self) -> bool:
        """True from Enter until the reply has ended."""
        return self._asking

    def set_ready(self, ready: bool, reason: str = "") -> None:
        """Enable the question line once the engine is ready; `reason` says why it is not."""
        if self.status_label.text() == self.reason:
            self.status_label.setText("")
        self.ready, self.reason = ready, reason
        if not ready and not self._asking:
            self.status_label.setText(reason)
        self._update_controls()

    def show_near(self, geometry: QRect | None = None) -> None:
        """Show by the tray icon at `geometry` (or top-right of the primary screen), focused."""
        screen = QGuiApplication.primaryScreen()
        if geometry is not None and geometry.isValid():
            screen = QGuiApplication.screenAt(geometry.center()) or screen
        self.move(place_near(self.size(), geometry, screen.availableGeometry()))
        self.show()
        self.raise_()
        self.activateWindow()
        if self.input.isEnabled():
            self.input.setFocus()
            self.input.selectAll()
        else:  # answering or loading: focus somewhere that passes Esc on to the panel
            self.answer.setFocus()

    # -- asking ------------------------------------------------------------------------------------
    def send(self) -> None:
        """Ask what is in the question line (Enter)."""
        text = self.input.text().strip()
        if not (text or self.files.drafts) or not self.ready or self._asking:
            return
        if self.files.reading():
            self.status_label.setText("Still reading a file: wait for it, or remove it.")
            return
        if (why := self.files.needs_word()) is not None:  # never dropped without a word
            self.status_label.setText(why + ".")
            return
        files = self.files.take()
        self._asking, self._stop_early = True, False
        self.question, self.question_files = text, tuple(a.name for a in files)
        self.reply_text = ""
        self.input.clear()
        self.status_label.setText("Thinking…")
        self._render()
        self._update_controls()
        self.bridge.run(find_or_create).success(lambda c: self._start(c.id, text, files)).failure(self._on_failed)

    def stop(self) -> None:
        """Stop the streaming answer; what was said so far is kept and stored as cancelled."""
        if self._send is not None:
            self._send.stop()
        elif self._asking:  # still finding the conversation: stop as soon as the reply starts
            self._stop_early = True

    def continue_in_confab(self) -> None:
        if self.conversation_id is not None:
            self.hide()
            self.continue_requested.emit(self.conversation_id)

    def _start(self, conversation_id: int, text: str, files: tuple = ()) -> None:
        self.conversation_id = conversation_id
        self._send = (Send(self.bridge, conversation_id, text, attachments=files).on_chunk(self._on_chunk)
                      .success(self._on_done).failure(self._on_failed).run())
        if self._stop_early:
            self._send.stop()
        self._update_controls()
        self.conversation_started.emit(conversation_id)

    def _on_chunk(self, chunk: Chunk) -> None:
        if chunk.prefill is not None:  # a long message is being read: say how far, not "Answering…"
            self.status_label.setText(progress_text(*chunk.prefill))
            return
        self.reply_text += chunk.text
        # a thinking model's reasoning is not shown here (the window shows it): say it is at it
        self.status_label.setText("Answering…" if self.reply_text or not chunk.reasoning else "Thinking it over…")
        self._render()

    def _on_done(self, finished: Finished) -> None:
        self._end("Stopped." if finished.finish_reason == "cancelled" else "")

    def _on_failed(self, error: BaseException) -> None:
        self._end(f"Could not answer: {error}")

    def _end(self, status: str) -> None:
        self._send, self._asking = None, False
        self.status_label.setText(status)
        self._render()
        self._update_controls()
        if self.isVisible():
            self.input.setFocus()
        if self.conversation_id is not None:
            self.reply_finished.emit(self.conversation_id)

    # -- drawing -----------------------------------------------------------------------------------
    def _update_controls(self) -> None:
        usable = self.ready and not self._asking
        self.input.setEnabled(usable)
        hint = "Ask anything (Enter sends, Esc closes)"
        self.input.setPlaceholderText(hint if self.ready else self.reason)
        self.input.setToolTip("" if self.ready else self.reason)
        self.stop_button.setVisible(self._send is not None)
        self.continue_button.setEnabled(self.conversation_id is not None)

    def _render(self) -> None:
        """Show the question and the answer; keeps following the end while the reader is there."""
        bar = self.answer.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        dark = self.palette().color(QPalette.ColorRole.Window).lightness() < 128
        clip = QUrl(PAPERCLIP_URL)  # an icon, not 📎: many machines have no emoji font
        self.answer.document().addResource(QTextDocument.ResourceType.ImageResource, clip, ui_pixmap("paperclip", 14))
        files = "".join(f'<img src="{PAPERCLIP_URL}" width="14" height="14"> {html.escape(name)}&nbsp;&nbsp;'
                        for name in self.question_files)
        question = (f'<p style="color: {"#9aa0a6" if dark else "#5f6368"};">'
                    f"{files}{html.escape(self.question)}</p>") if self.question or files else ""
        self.answer.setHtml(question + render_markdown(self.reply_text, dark=dark))
        if at_end:
            bar.setValue(bar.maximum())

    def _on_link(self, url: QUrl) -> None:
        index = copy_index(url.toString())
        if index is None:
            if url.scheme() in SAFE_SCHEMES:  # never a local file a reply happened to name
                QDesktopServices.openUrl(url)
            return
        blocks = code_blocks(self.reply_text)
        if index < len(blocks):
            QApplication.clipboard().setText(blocks[index])
            self.status_label.setText("Code copied.")

    def follow_theme(self) -> None:
        """Redraw in the app's current palette (a theme change made while the panel exists): the
        style sheet resolves `palette(...)` only when applied, and the answer's HTML has its colors."""
        self._restyling = True
        try:
            self.setStyleSheet("")
            self.setStyleSheet(PANEL_STYLE)
            self._render()
        finally:
            self._restyling = False

    # -- events ------------------------------------------------------------------------------------
    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt name)
        """Ctrl+V in the question line attaches copied files (or a copied image) instead of pasting
        their paths."""
        if (watched is self.input and event.type() == QEvent.Type.KeyPress
                and event.matches(QKeySequence.StandardKey.Paste)):
            mime = QApplication.clipboard().mimeData()
            files = local_files(mime)
            image = pasted_image(mime) if not files else None
            if files:
                self.files.add_paths(files)
                return True
            if image is not None:
                self.files.add_image(image)
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt name)
        if event.key() == Qt.Key.Key_Escape:
            self.hide()
        else:
            super().keyPressEvent(event)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt name)
        super().changeEvent(event)
        if event.type() in THEME_EVENTS and not self._restyling:
            self.follow_theme()
        if (event.type() == QEvent.Type.ActivationChange and self.isVisible()
                and not self.isActiveWindow() and not self._asking):
            self.hide()
