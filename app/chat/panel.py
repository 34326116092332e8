"""The right side of the window: one conversation's messages, the composer, and its replies.

Several conversations may stream at once; this panel shows one of them. A reply keeps streaming into
its own conversation (and the store) when the user switches away, and its text so far shows again
when they switch back.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from PySide6.QtCore import Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from app.bridge import Bridge, Finished, Send
from app.chat.branch_replies import BranchReplies
from app.chat.view import ChatView
from app.chat.context_meter import ContextMeter, estimate_tokens, used_tokens
from app.chat.composer import Composer
from app.chat.composer_files import ComposerFiles
from app.chat.header import HeaderFit, PromptBadge, SettingsButton, TitleLabel
from app.chat.labels import title_from
from app.store import Attachment, Message, Store
from app.chat.thinking_block import ThinkSwitch
from engine import Chunk, ContextOverflowError

UNTITLED = "New conversation"
READY_HINT = "Message (Enter sends, Shift+Enter new line, Esc stops)"


class ChatPanel(BranchReplies, QWidget):
    """Shows `current_id`'s conversation and runs its replies through the bridge."""

    conversation_created = Signal(int)
    """A first message created a conversation (the list should show and select it)."""
    replies_changed = Signal()
    """A reply started or ended somewhere (badges, list order, stop button)."""
    reply_finished = Signal(object)
    """`Finished` of a reply that ended normally or was stopped (status bar stats)."""
    settings_requested = Signal(int)
    """The user asked for this conversation's settings."""
    new_settings_requested = Signal()
    """The user asked for the settings of the conversation the next first message creates."""
    error = Signal(object)
    """A reply failed; the window shows it."""
    notice = Signal(str)
    """Something the user should know that is not a failure (e.g. why a message was not sent)."""
    page_changed = Signal(object)
    """The conversation shown changed (its id; None: a new page)."""

    def __init__(self, bridge: Bridge, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.current_id: Optional[int] = None
        self.streaming: dict[int, str] = {}
        """Text streamed so far, by conversation, for replies still running."""
        self.thought: dict[int, str] = {}
        """Reasoning streamed so far, by conversation, for replies still running."""
        self.new_thinking: bool = True
        """The Think switch of the conversation the next first message creates."""
        self.reading: dict[int, tuple[int, int]] = {}
        """(read, to read) of a running reply's long prompt, by conversation, until its first text."""
        self._ready = False
        self.new_settings: tuple[str, dict] = ("", {})
        """(system prompt, sampling) the next conversation created by a first message starts with."""
        self._page = 0
        """Counts the pages shown (each `show_conversation`), so late answers find the page moved on."""
        self._sent_base = 0
        """Tokens the meter showed before the last message was sent (see `_meter_from_prefill`)."""

        self.on_create: list[Callable[[], Callable[[Store, int], object]]] = []
        """Called when a first message is sent on a new page, each gives store work for the
        conversation it creates, run in the job that creates it, before its reply (app/mcp: tools)."""
        self._creating: Optional[int] = None
        """The page whose first message's conversation is being created; it becomes current when it
        exists, unless the user has moved to another page by then (Ctrl+N: that page takes a
        message at once, and the created conversation goes on in the background)."""
        self.setup_header()
        self.setup_view()
        self.setup_composer()
        self.setup_layout()

    # -- setup -------------------------------------------------------------------------------------
    def setup_header(self) -> None:
        self.title_label = TitleLabel(UNTITLED)
        self.title_label.setAccessibleName("Conversation title")
        font = self.title_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        font.setBold(True)
        self.title_label.setFont(font)
        self.prompt_badge = PromptBadge()
        self.context_meter = ContextMeter()
        self.settings_button = SettingsButton()
        self.settings_button.setAccessibleName("Conversation settings")
        self.settings_button.setToolTip("System prompt, temperature, top-p and reply length for this conversation")
        self.settings_button.clicked.connect(self.ask_settings)
        self.think_switch = ThinkSwitch()
        self.think_switch.changed.connect(self.set_thinking)

    def setup_view(self) -> None:
        self.chat_view = ChatView()
        self.chat_view.regenerate_requested.connect(self.regenerate)
        self.chat_view.edit_requested.connect(self.edit_and_resend)
        self.chat_view.version_requested.connect(self.show_version)
        self.chat_view.continue_requested.connect(self.continue_reply)
        self.chat_view.settings_requested.connect(self.ask_settings)
        self.chat_view.more_sources_requested.connect(self.more_passages)

    def setup_composer(self) -> None:
        self.composer = Composer()
        self.composer.submitted.connect(self.send)
        self.composer.textChanged.connect(lambda: self.context_meter.set_draft(self.composer.toPlainText()))
        self.composer.stop_requested.connect(self.stop)
        self.files = ComposerFiles(self.composer, self.context_meter, self)
        """Files attached to the next message (Attach…, drop, paste) and their chips."""
        self.send_button = QPushButton("Send")
        self.send_button.setAccessibleName("Send message")
        self.send_button.setToolTip("Send (Enter)")
        self.send_button.clicked.connect(self.composer.submit)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setAccessibleName("Stop reply")
        self.stop_button.setToolTip("Stop the reply (Esc)")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)

    def setup_layout(self) -> None:
        header_row = QWidget()  # every part gives up width (see `header`): none can push the window
        header = QHBoxLayout(header_row)
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title_label, stretch=1)
        parts = [self.prompt_badge, self.context_meter, self.think_switch, self.settings_button]
        for part in parts:
            header.addWidget(part)
        self.header_fit = HeaderFit(header_row, parts)
        buttons = self.composer_buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.files.button)
        buttons.addStretch()
        compose_row = QHBoxLayout()
        compose_row.addWidget(self.composer)
        compose_row.addLayout(buttons)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 6, 6, 6)
        box.addWidget(header_row)
        box.addWidget(self.chat_view, stretch=1)
        box.addWidget(self.files.tray)
        box.addWidget(self.files.why)
        box.addLayout(compose_row)

    def add_parts(self, header_part: QWidget, composer_button: QWidget, note: QWidget) -> None:
        """Another room's controls (app/mcp: tools): a part of the header (after the title, giving
        up width like the others), a button beside the composer, a line over it."""
        self.header_fit.row.layout().insertWidget(1, header_part)
        self.header_fit.parts.insert(0, header_part)
        self.composer_buttons.insertWidget(self.composer_buttons.count() - 1, composer_button)
        box = self.layout()
        box.insertWidget(box.count() - 1, note)

    # -- state -------------------------------------------------------------------------------------
    def set_ready(self, ready: bool, reason: str = "") -> None:
        """Enable the composer, or disable it showing `reason` (e.g. "Loading model…")."""
        self._ready = ready
        self.composer.setEnabled(ready)
        self.send_button.setEnabled(ready)
        self.files.button.setEnabled(ready)
        self.composer.setPlaceholderText(READY_HINT if ready else reason)
        self.composer.setToolTip("" if ready else reason)
        if ready:
            self.composer.setFocus()

    def show_conversation(self, conversation_id: Optional[int], title: str = "") -> None:
        """Show a conversation (None: an empty page, where sending starts a new one). Another
        conversation's header and messages appear together once loaded; until then the page is
        blank, never the old messages under the new header."""
        switching = conversation_id != self.chat_view.conversation_id
        if switching or conversation_id is None:
            self._page += 1  # a new page (a refresh of the same conversation is the same page)
        self.current_id = conversation_id
        if conversation_id is None or not switching:
            self.title_label.setText(title or UNTITLED)
        else:
            self.chat_view.clear_for(conversation_id)
            self.title_label.setText("")
        self._update_controls()
        self.page_changed.emit(conversation_id)
        if conversation_id is None:
            self.prompt_badge.show_prompt(self.new_settings[0])
            self.think_switch.show_state(self.new_thinking)
            self.chat_view.set_messages(None, [])
            self.context_meter.set_used(0)
            return
        self.new_settings = ("", {})  # set for a new conversation, left for another one
        self.show_prompt_of(conversation_id)
        self.bridge.run(lambda store: (store.get_conversation(conversation_id).title,
                                       store.messages(conversation_id))).success(
            lambda result: self._show_messages(conversation_id, *result))

    def _show_messages(self, conversation_id: int, title: str, messages: list[Message]) -> None:
        if conversation_id != self.current_id:
            return  # the user moved on before the messages arrived
        running = self.streaming.get(conversation_id)
        if running is not None and messages and messages[-1].status == "streaming":
            # The store holds the text flushed so far; show everything streamed until now.
            messages = messages[:-1] + [_with_content(messages[-1], running, self.thought.get(conversation_id, ""))]
        self.chat_view.set_messages(conversation_id, messages)
        self.title_label.setText(title or UNTITLED)  # with its messages, in the same frame
        self._set_meter(used_tokens(messages))
        if conversation_id in self.reading:
            self.chat_view.show_prefill(*self.reading[conversation_id])
        self._update_controls()

    def _update_controls(self) -> None:
        busy = self.current_id in self.bridge.replying()
        self.stop_button.setEnabled(busy)
        self.chat_view.set_busy(busy)

    # -- replies -----------------------------------------------------------------------------------
    def send(self, text: str) -> None:
        """Send `text`, with the files attached in the composer, in the current conversation (a new
        one, titled by the text or the first file's name, when none)."""
        if self._creating == self._page or (self.current_id is not None and self.current_id in self.bridge.replying()):
            self._give_back(text)
            self.notice.emit("Still replying here: wait, or press Esc to stop")
            return
        if self.files.tray.reading():
            self._give_back(text)
            self.notice.emit("Still reading a file: wait for it, or remove it with its ×")
            return
        if (why := self.files.tray.needs_word()) is not None:
            self._give_back(text)
            self.files.refuse(why)  # under the chips, where the user looks
            self.notice.emit(why)
            return
        files = self.files.tray.take()
        self._sent_base = self.context_meter.used
        sent = estimate_tokens(text) + sum(a.tokens if a.tokens is not None else estimate_tokens(a.text) for a in files)
        self._set_meter(self.context_meter.used + sent + 4)  # until its reply counts
        named = text or (files[0].name if files else "")
        if self.current_id is None:
            page = self._creating = self._page
            settings, self.new_settings = self.new_settings, ("", {})  # used once, by this conversation
            thinking = None if self.new_thinking else False  # on: the model's default
            extras = [make() for make in self.on_create]
            self.bridge.run(lambda store: _created_with(store, store.update_conversation(store.create_conversation(
                title_from(named), system_prompt=settings[0], sampling=settings[1]).id, thinking=thinking),
                extras)).success(
                lambda c: self._created(c.id, c.title, text, page, files)).failure(
                lambda e: self._create_failed(text, e, settings, files))
            return
        cid = self.current_id
        self.bridge.run(lambda store: _name_if_untitled(store, cid, named))
        self.chat_view.begin_exchange(text, files)
        self._start(Send(self.bridge, cid, text, attachments=files))

    def _give_back(self, text: str, files: tuple[Attachment, ...] = ()) -> None:
        """Not sent: the text and files go back into the composer (nothing the user gave is dropped)."""
        if not self.composer.toPlainText().strip():
            self.composer.setPlainText(text)
            self.composer.moveCursor(QTextCursor.MoveOperation.End)
        self.files.tray.restore(files)

    def _create_failed(self, text: str, error: BaseException, settings: tuple[str, dict],
                       files: tuple[Attachment, ...] = ()) -> None:
        self._creating = None
        self._give_back(text, files)
        if self.current_id is None and self.new_settings == ("", {}):
            self.set_new_settings(*settings)  # kept for the next try, like the text
        self.error.emit(RuntimeError(f"Could not start a conversation: {error}"))

    def _created(self, conversation_id: int, title: str, text: str, page: int,
                 files: tuple[Attachment, ...] = ()) -> None:
        if self._creating == page:
            self._creating = None
        if page != self._page:  # the user moved on (Ctrl+N, another conversation): reply unseen
            self._start(Send(self.bridge, conversation_id, text, attachments=files))
            return
        self.current_id = conversation_id
        self.page_changed.emit(conversation_id)
        self.title_label.setText(title)
        self.chat_view.begin_exchange(text, files, conversation_id)
        self.conversation_created.emit(conversation_id)
        self._start(Send(self.bridge, conversation_id, text, attachments=files))

    def _start(self, send: Send, so_far: str = "", thought: str = "") -> None:
        """Run `send`; the view already shows where its reply goes (begin_exchange, begin_*)."""
        cid = send.conversation_id
        self.streaming[cid] = so_far
        self.thought[cid] = thought
        if cid == self.current_id:
            self.context_meter.set_used(self.context_meter.used, so_far + thought)  # counted already
        (send.on_chunk(lambda chunk: self._on_chunk(cid, chunk))
         .success(self._on_finished)
         .failure(lambda error: self._on_failed(cid, error))
         .run())
        self._update_controls()
        self.replies_changed.emit()

    def stop(self) -> None:
        """Stop the current conversation's reply (kept, marked stopped)."""
        if self.current_id is not None:
            self.bridge.stop(self.current_id)

    def _on_chunk(self, conversation_id: int, chunk: Chunk) -> None:
        if chunk.prefill is not None:  # progress of a long prompt, not text
            self.reading[conversation_id] = chunk.prefill
            if conversation_id == self.current_id:
                self._meter_from_prefill(chunk.prefill[1])
                self.chat_view.show_prefill(*chunk.prefill)
            return
        text, reasoning = chunk.text, chunk.reasoning
        self.streaming[conversation_id] = self.streaming.get(conversation_id, "") + text
        self.thought[conversation_id] = self.thought.get(conversation_id, "") + reasoning
        if text or reasoning:
            self.reading.pop(conversation_id, None)
        if conversation_id == self.current_id and (text or reasoning):
            self.chat_view.append_to_last(text, reasoning)
            self.context_meter.follow_reply(self._streamed(conversation_id))  # the count moves as it streams

    def _streamed(self, conversation_id: Optional[int]) -> str:
        return self.streaming.get(conversation_id, "") + self.thought.get(conversation_id, "")

    def _set_meter(self, tokens: int) -> None:
        self.context_meter.set_used(tokens, self._streamed(self.current_id))

    def _meter_from_prefill(self, to_read: int) -> None:
        """The engine's count replaces the draft's estimate: `to_read` is the new part on a warm
        session (add what was there), or the whole prompt when it is read from the text again (it
        is then at least what was there)."""
        base = self._sent_base
        self._set_meter(to_read if to_read >= base else base + to_read)

    def _on_finished(self, finished: Finished) -> None:
        self._reply_ended(finished.conversation_id)
        self.reply_finished.emit(finished)

    def _on_failed(self, conversation_id: int, error: BaseException) -> None:
        self._reply_ended(conversation_id)
        if isinstance(error, ContextOverflowError):  # say what it means and what to do
            error = RuntimeError(f"This conversation is full ({error}), so the model cannot answer. "
                                 "Start a new conversation (Ctrl+N) to go on, or let this one leave out "
                                 "earlier messages (Conversation settings, When too long).")
        self.error.emit(error)

    def _reply_ended(self, conversation_id: int) -> None:
        self.streaming.pop(conversation_id, None)
        self.thought.pop(conversation_id, None)
        self.reading.pop(conversation_id, None)
        self.replies_changed.emit()
        if conversation_id == self.current_id:
            self.show_conversation(conversation_id, self.title_label.text())  # final text and status

    def ask_settings(self) -> None:
        """This conversation's settings; on a new page, those its first message will create it with."""
        if self.current_id is not None:
            self.settings_requested.emit(self.current_id)
        else:
            self.new_settings_requested.emit()

    def set_new_settings(self, system_prompt: str, sampling: dict) -> None:
        """Settings for the conversation the next first message creates (shown by the badge)."""
        self.new_settings = (system_prompt, dict(sampling))
        if self.current_id is None:
            self.prompt_badge.show_prompt(system_prompt)

    def show_prompt_of(self, conversation_id: int) -> None:
        """Show or hide the system prompt badge, and set the Think switch, from the stored conversation."""
        self.bridge.run(lambda store: store.get_conversation(conversation_id)).success(
            lambda c: self._show_settings_of(c) if conversation_id == self.current_id else None)

    def _show_settings_of(self, conversation) -> None:
        self.prompt_badge.show_prompt(conversation.system_prompt)
        self.think_switch.show_state(conversation.thinking)

    def set_thinking(self, on: bool) -> None:
        """The user flipped the Think switch: kept with the conversation (on a new page, for the
        conversation its first message creates); the next reply uses it."""
        cid = self.current_id
        if cid is None:
            self.new_thinking = on
            return
        self.bridge.run(lambda store: store.update_conversation(cid, thinking=on)).failure(self.error.emit)


def _created_with(store: Store, conversation, extras: list[Callable[[Store, int], object]]):
    for extra in extras:
        extra(store, conversation.id)
    return conversation


def _name_if_untitled(store, conversation_id: int, text: str) -> None:
    if not store.get_conversation(conversation_id).title:
        store.rename_conversation(conversation_id, title_from(text))


def _with_content(message: Message, content: str, reasoning: str) -> Message:
    return dataclasses.replace(message, content=content, reasoning=reasoning)
