"""`Shown`: what one message view shows, made from a stored `Message` (or, for a message not
stored yet, by hand), and what can be done with it (continue, how it ended)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from app.chat.reply_end import cut_by_context, cut_by_limit
from app.store import Message


@dataclass(frozen=True)
class Shown:
    """What one MessageView shows; a message not yet in the store has id None."""

    id: Optional[int]
    role: str
    content: str
    status: str
    error: Optional[str] = None
    model: Optional[str] = None
    """Name of the model that wrote a reply (None: unknown, or a typed message)."""
    finish_reason: Optional[str] = None
    completion_tokens: Optional[int] = None
    """Tokens of the reply's last run: the limit it stopped at when `finish_reason` is "length"."""
    version: int = 1
    versions: int = 1
    reasoning: str = ""
    """What a thinking model wrote before its answer (`content`), shown apart and collapsed."""
    reasoning_s: Optional[float] = None
    attachments: tuple = ()  # the message's attached files (`Attachment` records)
    tool_calls: tuple = ()  # the reply's tool calls and results (`ToolCallRecord`s)
    notice: str = ""  # e.g. that earlier messages were left out to fit the context
    prompt_tokens: Optional[int] = None
    """Tokens the model read for the reply's last run (with `completion_tokens`: how full the context was)."""
    sources: tuple = ()  # passages of the conversation's library the reply read (`Source`s)

    @classmethod
    def of(cls, m: Message) -> "Shown":
        return cls(m.id, m.role, m.content, m.status, m.error, m.model, m.finish_reason,
                   m.stats.completion_tokens if m.stats else None, m.version, m.versions,
                   m.reasoning, m.reasoning_s, m.attachments, m.tool_calls, m.notice,
                   m.stats.prompt_tokens if m.stats else None, m.sources)

    @property
    def thinking(self) -> bool:
        """Still thinking: streaming, with reasoning and no answer yet."""
        return self.status == "streaming" and bool(self.reasoning) and not self.content

    @property
    def cut_by_limit(self) -> bool:
        return cut_by_limit(self)

    @property
    def cut_by_context(self) -> bool:
        return cut_by_context(self)

    @property
    def can_continue(self) -> bool:
        """A finished reply that did not end on its own: cut by a limit, stopped, interrupted. Cut by
        a full context it can go on once the conversation leaves out earlier messages; until then a
        Continue is refused and the reply stays as it was."""
        return (self.role == "assistant" and self.id is not None
                and (self.cut_by_limit or self.cut_by_context or self.status in ("cancelled", "interrupted")))
