"""How much of the model's context a conversation uses, and a warning before it is full.

The figure comes from the store: the last reply's prompt and reply token counts (the engine's own),
plus a rough count for anything written after it and for the draft in the composer. The app never
tokenizes (the tokenizer lives in the engine), so the draft is estimated at `CHARS_PER_TOKEN`.

What happens when a message does not fit: the engine refuses a prompt that leaves no room in the
context (ContextOverflowError) and the model does not answer; the message stays in the conversation.
A reply that reaches the end of the context stops there ("Stopped at the limit"). The warning says so.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QWidget

from app.fitting import ElidedLabel
from app.store import Message

CHARS_PER_TOKEN = 4.0
"""Rough characters per token of English text for the draft estimate; while a long message is
read, the engine's own count replaces it. Attached files are counted by the engine where it can
(`attachment_count`)."""
NEARLY_FULL = 0.85
"""Share of the context past which the meter warns that replies will soon be cut short."""

FULL_TIP = ("This conversation no longer fits in the model's context of {limit:,} tokens: if you send "
            "this message the model will not answer it. Start a new conversation (Ctrl+N) to go on.")
NEARLY_FULL_TIP = ("This conversation has used most of the model's context of {limit:,} tokens: a reply "
                   "that reaches the end stops there, and once it is full the model cannot answer. "
                   "Start a new conversation (Ctrl+N) to go on.")


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN + 0.999) if text else 0


def used_tokens(messages: list[Message]) -> int:
    """Tokens the conversation fills: the last reply's own counts, plus estimates after it."""
    used, start = 0, 0
    for i in range(len(messages) - 1, -1, -1):
        stats = messages[i].stats
        if stats is not None and stats.prompt_tokens:
            used, start = stats.prompt_tokens + stats.completion_tokens, i + 1
            break
    # Before any reply with figures (or after it): the text itself, estimated, plus template overhead.
    return used + sum(estimate_tokens(m.content) + sum(_file_tokens(f) for f in m.attachments) + 4
                      for m in messages[start:])


def _file_tokens(attachment) -> int:
    """An image's tokens as counted when it was sent (0 when not counted); a file's text, estimated."""
    if attachment.is_image:
        return attachment.tokens or 0
    return estimate_tokens(attachment.text)


class ContextMeter(ElidedLabel):
    """ "2,310 / 4,096 tokens"; a warning with what will happen when the next message would not fit.
    Short of room, "2,310/4,096" (the words are in its tooltip)."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__("", parent, min_width=40)
        self.setAccessibleName("Context used")
        self.limit = 0
        self.used = 0
        self.draft = 0
        self.reply = 0
        """Tokens of a reply streaming now, estimated from its text since `set_used`."""
        self._counted = 0
        self.files = 0
        """Tokens of the files attached to the draft (see `files_exact`)."""
        self.files_exact = False
        """`files` is the model's own count (else an estimate)."""
        self.level = "ok"
        """"ok", "nearly" (past `NEARLY_FULL`) or "full" (the next message would not fit)."""
        self.hide()

    def set_limit(self, max_context: int) -> None:
        """The model's context in tokens (0: no model, the meter hides)."""
        self.limit = max_context
        self._update()

    def set_used(self, tokens: int, streamed: str = "") -> None:
        """What the conversation fills, `streamed` (the text of a reply streaming now) included."""
        self.used, self.reply, self._counted = tokens, 0, len(streamed)
        self._update()

    def follow_reply(self, streamed: str) -> None:
        """A reply streams: the count moves with what it wrote since `set_used` (estimated)."""
        tokens = estimate_tokens(streamed[self._counted:])
        if tokens != self.reply:
            self.reply = tokens
            self._update()

    def set_draft(self, text: str) -> None:
        self.draft = estimate_tokens(text)
        self._update()

    def set_files(self, tokens: int, exact: bool = False) -> None:
        """Tokens of the files attached to the draft (`exact`: the model's count, not an estimate):
        counted in the figure, since they are sent."""
        self.files, self.files_exact = tokens, exact
        self._update()

    def _update(self) -> None:
        if self.limit <= 0:
            self.hide()
            return
        total = self.used + self.reply + self.draft + self.files
        self.level = "full" if total >= self.limit else "nearly" if total >= NEARLY_FULL * self.limit else "ok"
        shown = min(self.used + self.reply + self.files, self.limit)
        figures, short = f"{shown:,} / {self.limit:,} tokens", f"{shown:,}/{self.limit:,}"
        if self.level == "full":
            self.setText(f"⚠ {figures} — full: the next message will not be answered", f"⚠ {short} full")
            self.setToolTip(FULL_TIP.format(limit=self.limit))
        elif self.level == "nearly":
            self.setText(f"⚠ {figures} — nearly full", f"⚠ {short} nearly full")
            self.setToolTip(NEARLY_FULL_TIP.format(limit=self.limit))
        else:
            self.setText(figures, short)
            self.setToolTip(f"Tokens this conversation fills of the model's context ({self.limit:,})"
                            + (f", with {'' if self.files_exact else 'about '}{self.files:,} of the attached files"
                               if self.files else ""))
        self.setStyleSheet("color: #b36b00;" if self.level != "ok" else "")
        self.show()
