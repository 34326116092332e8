"""One message in the chat view: its header (role, status, the model that wrote it, "‹ 2/3 ›" to
move between its versions, Continue / Edit / Regenerate / Copy) and its Markdown body, with
in-place editing of the user's own messages.

Split from `view` (the chat view), which arranges these in a scrolling column and decides when they re-render.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Optional

from PySide6.QtCore import QMimeData, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from app.chat.context_notice import ContextNotice
from app.chat.markdown_render import code_blocks, copy_index, render_markdown
from app.chat.message_body import MessageBody
from app.chat.message_editor import EditPanel
from app.chat.message_attachments import MessageFiles
from app.chat.message_sources import MessageSources
from app.chat.prefill_progress import PrefillProgress
from app.chat.reply_end import context_full_advice, status_note
from app.chat.shown import Shown
from app.models.names import display_name
from app.chat.thinking_block import ThinkingBlock, ThinkingClock
from app.fitting import ElidedLabel, FlowLayout, WrapLabel
from app.mcp.blocks import ToolBlocks
from app.error_line import ErrorLine

ROLE_NAMES = {"user": "You", "assistant": "Assistant", "system": "System"}
RENDER_INTERVAL_MS = 50
"""Streaming re-renders the last message at most this often (less often when rendering is slow)."""
BOTTOM_SLACK_PX = 8
"""Within this distance of the bottom the user counts as "at the bottom" (stays pinned)."""
EXTERNAL_SCHEMES = ("http", "https", "mailto")
"""Links in messages that open in the user's browser or mail app; any other link does nothing."""
DEFAULT_EMPTY_TEXT = "<p style='font-size: large;'>Start a conversation</p><p>Type a message below.</p>"


class MessageView(QFrame):
    """One message: a header (role, status note, buttons) over its rendered Markdown, or over an
    inline editor while the user edits it."""

    regenerate_clicked = Signal(int)
    """(message id): write this reply again, as a new version."""
    delete_clicked = Signal(int)
    """(message id): delete this message (Undo brings it back)."""
    edit_submitted = Signal(int, str)
    """(message id, new text)."""
    version_requested = Signal(int, int)
    """(message id, step): show the previous (-1) or next (+1) version of this message."""
    continue_clicked = Signal(int)
    """(message id): write more of this reply."""
    settings_clicked = Signal()
    """The conversation's settings (When too long), for a reply cut by a full context."""
    more_sources_clicked = Signal(int)
    """(message id): write this reply again, reading more passages of the library."""

    def __init__(self, shown: Shown, *, dark: bool = False, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.shown = shown
        self.dark = dark
        self.busy = False
        self.is_last_reply = False
        self.editor: Optional[EditPanel] = None
        self._render_timer = QTimer(self, singleShot=True, interval=RENDER_INTERVAL_MS)
        self._render_timer.timeout.connect(self.render_body)
        self._copied_timer = QTimer(self, singleShot=True, interval=1500)
        self._copied_timer.timeout.connect(self._copied_done)
        self.copied_block: Optional[int] = None
        """The code block whose Copy link says "Copied" for a moment (None: none)."""
        self.setup_header()
        self.body = MessageBody()
        self.body.anchorClicked.connect(self._on_link)
        box = QVBoxLayout(self)
        box.setContentsMargins(10, 6, 10, 6)
        box.setSpacing(2)
        box.addLayout(self.header)
        box.addWidget(self.note_label)  # its own line: a long error wraps there, never widens the header
        self.error_line = ErrorLine(accessible_name="Why the reply ended")
        """Why a reply failed or was cut off, in words, with the raw error behind "Details"."""
        box.addWidget(self.error_line)
        self.files = MessageFiles()
        box.addWidget(self.files)
        self.progress = PrefillProgress()
        box.addWidget(self.progress)
        self.thinking = ThinkingBlock()  # above the answer; collapsed
        self._clock = ThinkingClock()
        box.addWidget(self.thinking)
        self.tools = ToolBlocks()  # the reply's tool calls, collapsed (app/mcp)
        box.addWidget(self.tools)
        self.notice = ContextNotice()
        box.addWidget(self.notice)
        box.addWidget(self.body)
        self.sources = MessageSources()  # "Sources: manual.pdf p. 12 …" under a reply that read some
        self.sources.more_clicked.connect(lambda: self._more_sources())
        box.addWidget(self.sources)
        box.addWidget(self.model_label)  # under the reply: the header stays short
        self._apply(shown)

    def setup_header(self) -> None:
        self.role_label = QLabel()
        font = self.role_label.font()
        font.setBold(True)
        self.role_label.setFont(font)
        self.note_label = WrapLabel()
        self.note_label.setAccessibleName("Reply status")
        self.note_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.model_label = ElidedLabel()
        self.model_label.setAccessibleName("Model that wrote this reply")
        self.model_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        small = self.model_label.font()
        small.setPointSizeF(small.pointSizeF() * 0.85)
        self.model_label.setFont(small)
        self.setup_versions()
        self.continue_button = _small_button("Continue", "Continue reply", "Write more of this reply")
        self.continue_button.clicked.connect(self._continue)
        self.too_long_button = _small_button("When too long…", "When the conversation is too long",
                                             "Let this conversation leave out earlier messages when it no "
                                             "longer fits the model's context (its settings)")
        self.too_long_button.clicked.connect(self.settings_clicked)
        self.copy_button = _small_button("Copy", "Copy message", "Copy this message as Markdown")
        self.copy_button.clicked.connect(self.copy_text)
        self.delete_button = _small_button("Delete", "Delete message", "Delete this message (Undo brings it back)")
        self.delete_button.clicked.connect(self._delete)
        self.edit_button = _small_button("Edit", "Edit message", "Edit this message and send it again")
        self.edit_button.clicked.connect(self.start_edit)
        self.regenerate_button = _small_button("Regenerate", "Regenerate reply", "Write this reply again")
        self.regenerate_button.clicked.connect(self._regenerate)
        self.buttons = QWidget()  # the buttons wrap onto a second line rather than pass the edge
        flow = FlowLayout(self.buttons, spacing=6)
        for w in (self.previous_button, self.version_label, self.next_button, self.continue_button,
                  self.too_long_button, self.edit_button, self.regenerate_button, self.copy_button,
                  self.delete_button):
            flow.addWidget(w)
        self.header = QHBoxLayout(spacing=6)
        self.header.addWidget(self.role_label, 0, Qt.AlignmentFlag.AlignTop)
        self.header.addStretch(1)
        self.header.addWidget(self.buttons)

    def setup_versions(self) -> None:
        """"‹ 2/3 ›": which version of this message is shown, and buttons to the others."""
        self.previous_button = _small_button("‹", "Previous version", "Show the previous version")
        self.previous_button.clicked.connect(lambda: self._step_version(-1))
        self.next_button = _small_button("›", "Next version", "Show the next version")
        self.next_button.clicked.connect(lambda: self._step_version(+1))
        self.version_label = QLabel(accessibleName="Version shown")
        self.version_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)

    # -- content -----------------------------------------------------------------------------------
    def show_message(self, shown: Shown) -> None:
        """Show `shown`; does nothing when it is what is shown already (no flicker). A reply still
        streaming keeps the text streamed so far when the store's copy lags behind it."""
        same = self.shown.id in (None, shown.id)  # another row (a new version) never inherits text
        if shown.status == "streaming" and same and self.shown.content.startswith(shown.content) \
                and self.shown.reasoning.startswith(shown.reasoning):
            shown = replace(shown, content=self.shown.content, reasoning=self.shown.reasoning,
                            reasoning_s=self._clock.seconds or shown.reasoning_s)
        if shown != self.shown:
            self._apply(shown)

    def replace_message(self, shown: Shown) -> None:
        """Show `shown` as it is, dropping whatever text this view had (a new version starts)."""
        self._clock = ThinkingClock()  # a new reply thinks from its own start
        self._apply(shown)

    def set_prefill(self, done: int, total: int) -> None:
        """A streaming reply whose long prompt is still being read shows how far it got."""
        if self.shown.status == "streaming" and not self.shown.content:
            self.progress.set_progress(done, total)
            self.body.hide()  # the bar says it all; no "…" under it

    def _clear_progress(self) -> None:
        if not self.progress.isHidden():  # only then was the body hidden for it (not by an editor)
            self.progress.clear()
            self.body.show()

    def append(self, text: str, reasoning: str = "") -> None:
        """Add streamed text (and reasoning, shown apart); the Markdown is re-rendered on the next
        tick of the render timer."""
        if text or reasoning:
            self._clear_progress()
        self._clock.saw(reasoning, text)
        self.shown = replace(self.shown, content=self.shown.content + text,
                             reasoning=self.shown.reasoning + reasoning,
                             reasoning_s=self._clock.seconds if self.shown.reasoning or reasoning else None)
        if not self._render_timer.isActive():
            self._render_timer.start()

    def render_body(self) -> None:
        """Render the Markdown now. A slow render (a long reply) spaces the next streaming render
        out to twice its cost, so the window keeps answering the user."""
        self._render_timer.stop()
        started = time.perf_counter()
        self.thinking.show_reasoning(self.shown.reasoning, self.shown.reasoning_s, self.shown.thinking)
        if self.shown.thinking:
            self.body.setHtml("")  # "Thinking…" above says it all
        elif not self.shown.content and self.shown.status == "streaming":
            self.body.setHtml("<p style='color: gray;'>…</p>")  # waiting for the first token
        else:
            self.body.setHtml(render_markdown(self.shown.content, dark=self.dark, copied=self.copied_block))
        cost_ms = (time.perf_counter() - started) * 1000
        self._render_timer.setInterval(max(RENDER_INTERVAL_MS, round(2 * cost_ms)))

    def plain_text(self) -> str:
        """Role name, then the raw text, with how the reply ended in parentheses."""
        note = status_note(self.shown)
        if self.shown.status == "error" and self.shown.error:
            note = f"{note}: {self.shown.error}"  # the raw reason, as it was stored
        return f"{ROLE_NAMES.get(self.shown.role, self.shown.role)}\n{self.shown.content}" + (
            f" ({note[0].lower()}{note[1:]})" if note else "")

    def _apply(self, shown: Shown) -> None:
        self.shown = shown
        if shown.status != "streaming" or shown.content:
            self._clear_progress()
        name = ROLE_NAMES.get(shown.role, shown.role)
        self.role_label.setText(name)
        self.body.setAccessibleName(f"{name} message")
        note = status_note(shown)
        self.note_label.setText(note if len(note) <= 300 else note[:299] + "…")
        self.note_label.setToolTip(note)
        self.note_label.setVisible(bool(note))
        if shown.error and shown.status in ("error", "interrupted"):
            self.error_line.show_error(shown.error)
        elif shown.cut_by_context:
            self.error_line.show_text(context_full_advice(shown))
        else:
            self.error_line.clear()
        model = display_name(shown.model) if shown.role == "assistant" and shown.model else ""
        self.model_label.setText(model)
        self.model_label.setToolTip(f"Written by {model}" if model else "")
        self.model_label.setVisible(bool(model))
        self.files.show_files(shown.attachments)
        self.tools.show_calls(shown.tool_calls)
        self.notice.show_notice(shown.notice)
        self.sources.show_sources(shown.sources)
        if shown.role == "user" and self.editor is None:
            self.body.setVisible(bool(shown.content) or not shown.attachments)  # files alone: no empty line
        self.version_label.setText(f"{shown.version}/{shown.versions}")
        self.version_label.setToolTip(f"Version {shown.version} of {shown.versions}")
        self._update_buttons()
        self.render_body()
        self.update()  # the background depends on the role

    # -- state -------------------------------------------------------------------------------------
    def set_dark(self, dark: bool) -> None:
        if dark != self.dark:
            self.dark = dark
            self.render_body()

    def set_busy(self, busy: bool) -> None:
        self.busy = busy
        self._update_buttons()

    def set_last_reply(self, last: bool) -> None:
        self.is_last_reply = last
        self._update_buttons()

    def _update_buttons(self) -> None:
        can_edit = self.shown.role == "user" and self.shown.id is not None
        self.edit_button.setVisible(can_edit and self.editor is None)
        self.edit_button.setEnabled(not self.busy)
        stored = self.shown.id is not None and self.shown.status != "streaming"
        self.regenerate_button.setVisible(self.shown.role == "assistant" and stored)
        self.regenerate_button.setEnabled(not self.busy)
        self.sources.more_button.setEnabled(not self.busy)
        self.delete_button.setVisible(stored)
        self.delete_button.setEnabled(not self.busy)
        self.continue_button.setVisible(self.is_last_reply and self.shown.can_continue)
        self.continue_button.setEnabled(not self.busy)
        self.too_long_button.setVisible(self.is_last_reply and self.shown.cut_by_context)
        several = self.shown.versions > 1 and self.shown.id is not None
        for w in (self.previous_button, self.version_label, self.next_button):
            w.setVisible(several)
        self.previous_button.setEnabled(not self.busy and self.shown.version > 1)
        self.next_button.setEnabled(not self.busy and self.shown.version < self.shown.versions)
        if self.editor is not None:
            self.editor.send_button.setEnabled(not self.busy)

    # -- actions -----------------------------------------------------------------------------------
    def copy_text(self) -> None:
        """Copy the message as Markdown, its source as written (a thinking model's reasoning stays
        out): as plain text, and as text/markdown for editors that take it."""
        data = QMimeData()
        data.setText(self.shown.content)
        data.setData("text/markdown", self.shown.content.encode("utf-8"))
        QApplication.clipboard().setMimeData(data)
        self.copy_button.setText("Copied")
        self._copied_timer.start()

    def _copied_done(self) -> None:
        self.copy_button.setText("Copy")
        if self.copied_block is not None:
            self.copied_block = None
            self.render_body()

    def _on_link(self, url: QUrl) -> None:
        index = copy_index(url.toString())
        if index is not None:
            blocks = code_blocks(self.shown.content)
            if index < len(blocks):
                QApplication.clipboard().setText(blocks[index])
                self.copied_block = index  # the link says "Copied" until the timer runs out
                self.render_body()
                self._copied_timer.start()
        elif url.scheme() in EXTERNAL_SCHEMES:
            QDesktopServices.openUrl(url)

    def _step_version(self, step: int) -> None:
        if not self.busy and self.shown.id is not None:
            self.version_requested.emit(self.shown.id, step)

    def _regenerate(self) -> None:
        if not self.busy and self.shown.id is not None:
            self.regenerate_clicked.emit(self.shown.id)

    def _more_sources(self) -> None:
        if not self.busy and self.shown.id is not None:
            self.more_sources_clicked.emit(self.shown.id)

    def _delete(self) -> None:
        if not self.busy and self.shown.id is not None:
            self.delete_clicked.emit(self.shown.id)

    def _continue(self) -> None:
        if not self.busy and self.shown.id is not None and self.shown.can_continue:
            self.continue_clicked.emit(self.shown.id)

    def start_edit(self) -> None:
        """Swap the body for an editor holding the raw text, with Send and Cancel."""
        if self.editor is not None or self.shown.id is None:
            return
        self.editor = EditPanel(self.shown.content, self)
        self.editor.sent.connect(self._send_edit)
        self.editor.cancelled.connect(self.stop_edit)
        self.layout().addWidget(self.editor)
        self.body.hide()
        self._update_buttons()
        self.editor.text.setFocus()

    def stop_edit(self) -> None:
        if self.editor is not None:
            self.editor.deleteLater()
            self.editor = None
            self.body.show()
            self._update_buttons()

    def _send_edit(self, text: str) -> None:
        if self.busy or self.shown.id is None or not text.strip():
            return
        message_id = self.shown.id
        self.stop_edit()
        self.edit_submitted.emit(message_id, text)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        """The user's messages sit on a faint tint of the highlight color, in light and dark."""
        if self.shown.role == "user":
            pal = self.palette()
            tint = _mix(pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Highlight), 0.10)
            painter = QPainter(self)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(tint)
            painter.drawRoundedRect(self.rect().adjusted(1, 1, -1, -1), 8, 8)
            painter.end()
        super().paintEvent(event)


def _small_button(text: str, name: str, tip: str) -> QToolButton:
    button = QToolButton(text=text, toolTip=tip, autoRaise=True, accessibleName=name)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    return button


def _mix(a: QColor, b: QColor, t: float) -> QColor:
    return QColor(*(round(x + (y - x) * t) for x, y in zip(a.getRgb()[:3], b.getRgb()[:3])))
