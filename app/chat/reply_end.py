"""How a reply ended, in words: the note beside its header ("Stopped at the 512-token limit") and,
for a reply cut because the conversation filled the model's context, what to do about it.

The engine says "length" for both limits; the store keeps "context" when the context was the one
(`app.store.CONTEXT_FULL`). The two need different fixes: a higher token
limit for the first, leaving out earlier messages ("When too long") or a new conversation for the
second, so the window names the real one, with its numbers.
"""

from __future__ import annotations

from typing import Optional, Protocol

from app.store import CONTEXT_FULL

STATUS_NOTES = {"cancelled": "Stopped", "interrupted": "Interrupted", "error": "Failed"}


class Ended(Protocol):
    """What these words are made from (a `Shown`)."""

    status: str
    finish_reason: Optional[str]
    completion_tokens: Optional[int]
    prompt_tokens: Optional[int]


def cut_by_limit(shown: Ended) -> bool:
    """The reply reached its token limit (max tokens)."""
    return shown.status == "complete" and shown.finish_reason == "length"


def cut_by_context(shown: Ended) -> bool:
    """The reply stopped because the conversation filled the model's context."""
    return shown.status == "complete" and shown.finish_reason == CONTEXT_FULL


def _context_tokens(shown: Ended) -> int:
    return (shown.prompt_tokens or 0) + (shown.completion_tokens or 0)


def status_note(shown: Ended) -> str:
    """The header's note on how a reply ended ("" when it completed or is still streaming)."""
    if cut_by_context(shown):
        total = _context_tokens(shown)
        return f"Stopped: the context is full ({total:,} tokens)" if total else "Stopped: the context is full"
    if cut_by_limit(shown):
        limit = f"{shown.completion_tokens:,}-token" if shown.completion_tokens else "token"
        return f"Stopped at the {limit} limit"
    return STATUS_NOTES.get(shown.status, "")  # why it failed: the error line under the header


def context_full_advice(shown: Ended) -> str:
    """What a reply cut by a full context means and what fixes it ("" for any other reply)."""
    if not cut_by_context(shown):
        return ""
    total, reply = _context_tokens(shown), shown.completion_tokens or 0
    numbers = (f" ({total:,} tokens: {total - reply:,} of conversation, {reply:,} of this reply)"
               if total else "")
    return (f"The conversation filled the model's context{numbers}, so the reply stopped there; a higher "
            "token limit would not help. To go on, let this conversation leave out earlier messages "
            "(When too long, in its settings) and Continue, or start a new conversation (Ctrl+N).")
