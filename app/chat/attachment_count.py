"""Tokens of a file to attach, and the first part of it that fits: exact where the engine can count.

    counted = count_read(read, engine.count_tokens, limit=engine.max_context)   # a reading thread
    attachment, counted = fit_part(read, room, engine.count_tokens)             # "Attach the first part"

Code, CSV and JSON take far more tokens per character than English prose, so the 4-characters
estimate judges such a file to fit when it does not. A local engine counts with the model's own
tokenizer (`Engine.count_tokens`); a remote one cannot (the OpenAI API has no tokenize call), and
then the estimate stays, shown with "~". No Qt: these run on the tray's reading threads, never on
the GUI thread, since an exact count costs about a second per few MB of text.

A 200 MB file is not counted whole: only up to what could ever fit (the model's context). Past
that the count is the exact tokens of that first part plus the rest estimated at the first part's
own density, and says so (`exact` is False).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from app.chat.attachment_reader import FileRead
from app.chat.context_meter import CHARS_PER_TOKEN, estimate_tokens
from app.store import Attachment

Counter = Callable[[str], int]
"""The engine's exact count of a text (`Engine.count_tokens`)."""
FIRST_PROBE = 64 << 10
"""Characters counted at least, first (cheap: a few milliseconds), so a small context does not
mean many small counts."""
FIT_SLACK = 0.005
"""Share of the room the part that fits may leave unused; searching closer costs more counts."""
MAX_COUNTS = 40
"""Counts the search for the part that fits makes at most (it needs about ten)."""


@dataclass(frozen=True)
class TokenCount:
    """Tokens of an attachment's text, as the chip and the context meter show them."""

    tokens: int
    exact: bool
    """The model's own count of all of it; False: estimated (no tokenizer, or only a first part
    was counted and the rest estimated)."""
    counted_chars: int = 0
    """Characters counted exactly, when only a first part was (0 otherwise)."""

    @property
    def text(self) -> str:
        """"1,204" when exact, "~1,204" when estimated."""
        return f"{'' if self.exact else '~'}{self.tokens:,}"


def stored_count(attachment: Attachment) -> TokenCount:
    """The count a sent file's chip shows: the one its composer chip showed, kept with it when it
    was sent; the estimate for a file sent before counts were kept."""
    if attachment.tokens is not None:
        return TokenCount(attachment.tokens, attachment.tokens_exact)
    return TokenCount(estimate_tokens(attachment.text), False)


def estimated(chars: int) -> TokenCount:
    return TokenCount(int(chars / CHARS_PER_TOKEN + 0.999) if chars else 0, False)


def count_text(text: str, count: Optional[Counter]) -> TokenCount:
    """All of `text`, counted exactly when there is a counter (a text already cut to fit)."""
    return TokenCount(count(text), True) if count is not None else TokenCount(estimate_tokens(text), False)


def count_read(read: FileRead, count: Optional[Counter], limit: Optional[int]) -> TokenCount:
    """Tokens of the whole file `read`: exact when a counter is given and the file is within
    `limit` tokens (the model's context: nothing longer can be sent whole; None or 0: unknown, and
    the count is estimated); past it, the exact
    count of a first part that is longer than `limit` plus the rest estimated at its density."""
    if count is None or not limit:
        return estimated(read.chars)
    text, whole = read.text, len(read.text) == read.chars
    probe = max(FIRST_PROBE, int(limit * CHARS_PER_TOKEN * 1.25))
    while True:
        end = _boundary(text, min(len(text), probe))
        tokens = count(text[:end])
        if end == len(text) and whole:
            return TokenCount(tokens, True)
        if tokens > limit or end == len(text):
            rest = (read.chars - end) * tokens / max(1, end)
            return TokenCount(tokens + round(rest), False, counted_chars=end)
        probe = end * 4  # denser than guessed: count a longer first part


def fit_part(read: FileRead, room: int, count: Optional[Counter]) -> tuple[Attachment, TokenCount]:
    """The longest first part of `read` (cut at a line break when one is near the end) whose
    tokens are at most `room`, and its count. Without a counter it is cut at the estimate.

    With a counter, the cut is searched with exact counts of prefixes: interpolating on the
    counts seen (token density is nearly even within a file), alternating with halving so that
    an uneven file still converges; about ten counts of at most the room's worth of text."""
    text = read.text
    if count is None:
        attachment = read.attachment(max_tokens=room)
        return attachment, count_text(attachment.text, None)
    lo, lo_tokens, hi, hi_tokens = 0, 0, len(text) + 1, None
    probe = min(len(text), max(1, int(room * CHARS_PER_TOKEN)))
    counts = 0
    while hi_tokens is None and counts < MAX_COUNTS:  # grow until a prefix does not fit
        tokens, counts = count(text[:probe]), counts + 1
        if tokens <= room:
            lo, lo_tokens = probe, tokens
            if probe == len(text):
                return _part(read, text), TokenCount(tokens, True)
            probe = min(len(text), probe * 2)
        else:
            hi, hi_tokens = probe, tokens
    step = 0
    while hi_tokens is not None and hi - lo > 1 and room - lo_tokens > room * FIT_SLACK and counts < MAX_COUNTS:
        if step % 2 == 0:  # interpolate
            mid = lo + int((hi - lo) * (room - lo_tokens) / max(1, hi_tokens - lo_tokens))
        else:
            mid = (lo + hi) // 2
        mid, step = min(max(mid, lo + 1), hi - 1), step + 1
        tokens, counts = count(text[:mid]), counts + 1
        if tokens <= room:
            lo, lo_tokens = mid, tokens
        else:
            hi, hi_tokens = mid, tokens
    part = _near_line_break(text, lo)
    tokens = count(part)
    while tokens > room and part:  # a cut can tokenize a little differently: shrink until it fits
        part = part[:len(part) * 99 // 100]
        tokens = count(part)
    return _part(read, part), TokenCount(tokens, True)


def _part(read: FileRead, text: str) -> Attachment:
    truncated = len(text) < read.chars
    return Attachment(read.name, read.media_type, read.size, text, truncated=truncated, data=read.data)


def _near_line_break(text: str, end: int) -> str:
    """`text[:end]`, cut back to its last line break when that loses at most a fifth of it."""
    if end >= len(text):
        return text
    cut = text.rfind("\n", 0, end)
    return text[:cut + 1] if cut >= end * 0.8 else text[:end]


def _boundary(text: str, end: int) -> int:
    """`end`, moved back to just after a line break or space when one is near, so a counted first
    part does not end inside a word (whose tokens the rest of the file would change)."""
    if end >= len(text):
        return len(text)
    cut = max(text.rfind("\n", max(0, end - 4096), end), text.rfind(" ", max(0, end - 256), end))
    return cut + 1 if cut > 0 else end
