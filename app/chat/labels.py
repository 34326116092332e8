"""Words the chat shows, kept in the chat room; the Markdown export writes the same words."""

from __future__ import annotations

from typing import Optional


def thought_label(seconds: Optional[float]) -> str:
    """"Thought for 12 s" (or "Thought" when the time is unknown)."""
    if seconds is None:
        return "Thought"
    return f"Thought for {seconds:.0f} s" if seconds >= 1 else "Thought for less than a second"


def title_from(text: str) -> str:
    """A conversation's default title: its first line, shortened."""
    from app.chat.markdown_render import plain_title

    first = plain_title(text.strip().splitlines()[0]) if text.strip() else ""
    return first[:40].rstrip() + ("…" if len(first) > 40 else "")
