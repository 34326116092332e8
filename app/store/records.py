"""Frozen records the store hands out, and the vocabulary of roles and statuses.

Times are Unix seconds (float, UTC). Token ids are the exact ids as sampled, stored as JSON text:
re-rendering the chat template can tokenize a reply differently and break a warm resume's prefix
match (LESSONS.md, ExecuTorch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from .errors import InvalidValueError

Role = Literal["system", "user", "assistant"]
Status = Literal["complete", "streaming", "interrupted", "cancelled", "error"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")
STATUSES: tuple[str, ...] = ("complete", "streaming", "interrupted", "cancelled", "error")
FINAL_STATUSES: tuple[str, ...] = ("complete", "interrupted", "cancelled", "error")
"""Statuses a finished reply may end with (everything but `streaming`)."""
CONTEXT_FULL = "context"
"""The finish reason kept for a reply cut because the conversation filled the model's context. The
engine says "length" for both limits; a person needs to know which (a higher token limit cannot help
a full context, leaving out earlier messages can)."""


def check_choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """Return `value` if it is one of `allowed`, else raise InvalidValueError naming `name`."""
    if value not in allowed:
        raise InvalidValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value  # type: ignore[return-value]


def check_text(name: str, value: object, *, optional: bool = False) -> None:
    """Raise InvalidValueError unless `value` is a str (or None, when `optional`)."""
    if not isinstance(value, str) and not (optional and value is None):
        raise InvalidValueError(f"{name} must be text, not {type(value).__name__}")


def sampling_json(sampling: Any) -> str:
    """JSON text for a conversation's sampling overrides; a dict of JSON values only."""
    if not isinstance(sampling, dict):
        raise InvalidValueError(f"sampling must be a dict of setting names to values, not {sampling!r}")
    try:  # not ensure_ascii: a lone surrogate in a setting is then replaced on write like any text
        return json.dumps(sampling, sort_keys=True, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise InvalidValueError(f"sampling must hold only JSON values ({e})") from None


def token_ids_json(token_ids: Optional[Any]) -> Optional[str]:
    """JSON text for a sequence of token ids (None stays None); refuses anything but ints."""
    if token_ids is None:
        return None
    ids = list(token_ids)
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise InvalidValueError(f"token_ids must be integers, not {ids[:5]!r}...")
    return json.dumps(ids, separators=(",", ":"))


@dataclass(frozen=True)
class ReplyStats:
    """Figures of one generated reply; any may be unknown (None)."""

    ttft_s: Optional[float] = None
    """Seconds from the request to the first token."""
    tok_s: Optional[float] = None
    """Decode speed, tokens per second."""
    prompt_tokens: Optional[int] = None
    """Tokens in the prompt of this turn."""
    completion_tokens: Optional[int] = None
    """Tokens generated for the reply."""

    def columns(self) -> dict[str, Any]:
        return {"ttft_s": self.ttft_s, "tok_s": self.tok_s, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


@dataclass(frozen=True)
class Conversation:
    """One conversation's settings; its messages are read with `Store.messages(id)`."""

    id: int
    title: str
    """Shown in the list; "" until the user or the app names it."""
    created_at: float
    updated_at: float
    """Last time a message was added, edited or finished."""
    pinned: bool
    model: Optional[str]
    """Model source the conversation uses (None: the app's default)."""
    system_prompt: str
    sampling: dict[str, Any] = field(hash=False)
    """Sampling overrides by name (e.g. {"temperature": 0.2}); {} means the engine's defaults."""
    thinking: Optional[bool] = None
    """The Think switch for models that have one: None keeps the model's default."""

    @classmethod
    def from_row(cls, row: dict) -> "Conversation":
        thinking = row.get("thinking")
        return cls(id=row["id"], title=row["title"], created_at=row["created_at"],
                   updated_at=row["updated_at"], pinned=bool(row["pinned"]), model=row["model"],
                   system_prompt=row["system_prompt"], sampling=json.loads(row["sampling"] or "{}"),
                   thinking=None if thinking is None else bool(thinking))


@dataclass(frozen=True)
class Message:
    """One message of a conversation; `Store.messages` gives the shown branch, in order."""

    id: int
    conversation_id: int
    position: int
    """Insertion order within the conversation (0, 1, 2, ...); increases along every branch."""
    role: Role
    content: str
    status: Status
    token_ids: Optional[tuple[int, ...]]
    """Exact token ids of a generated reply (None for typed messages or after an edit)."""
    error: Optional[str]
    """What went wrong, for status `error`."""
    stats: Optional[ReplyStats]
    created_at: float
    updated_at: float
    parent_id: Optional[int] = None
    """The message this one follows (None: the first of the conversation); siblings are versions."""
    model: Optional[str] = None
    """Display name of the model that wrote this reply (None for typed messages and older replies)."""
    finish_reason: Optional[str] = None
    """Why a reply ended, as the engine said ("stop", "length", "cancelled"); "length" means it was
    cut by the token limit and can be continued, `CONTEXT_FULL` ("context") that the context was full
    when it stopped. None while streaming and for older replies."""
    version: int = 1
    """1-based index among its versions (siblings), in creation order."""
    versions: int = 1
    """How many versions this message has (1: never regenerated or edited)."""
    reasoning: str = ""
    """What a thinking model wrote before its answer (`content`), kept apart; "" for others."""
    reasoning_s: Optional[float] = None
    """Seconds it spent thinking ("Thought for 12 s"); None when it did not think or unknown."""
    attachments: tuple = ()
    """Files attached to this message (`Attachment` records, without their bytes but for images'),
    in order."""
    tool_calls: tuple = ()
    """Tool calls this reply made, with their results (`ToolCallRecord`s), in order."""
    notice: str = ""
    """Shown on a reply: e.g. that earlier messages were left out to fit the context; "" for none."""
    sources: tuple = ()
    """Passages of the conversation's library this reply read (`library.Source`s), in order."""

    @classmethod
    def from_row(cls, row: dict, version: int = 1, versions: int = 1, attachments: tuple = (),
                 tool_calls: tuple = (), sources: tuple = ()) -> "Message":
        stats = ReplyStats(row["ttft_s"], row["tok_s"], row["prompt_tokens"], row["completion_tokens"])
        ids = row["token_ids"]
        return cls(id=row["id"], conversation_id=row["conversation_id"], position=row["position"],
                   role=row["role"], content=row["content"], status=row["status"],
                   token_ids=tuple(json.loads(ids)) if ids is not None else None, error=row["error"],
                   stats=stats if stats != ReplyStats() else None,
                   created_at=row["created_at"], updated_at=row["updated_at"],
                   parent_id=row.get("parent_id"), model=row.get("model"),
                   finish_reason=row.get("finish_reason"), version=version, versions=versions,
                   reasoning=row.get("reasoning") or "", reasoning_s=row.get("reasoning_s"),
                   attachments=attachments, tool_calls=tool_calls,
                   notice=row.get("notice") or "", sources=sources)


@dataclass(frozen=True)
class SavedState:
    """A saved session state file: a cache, deletable and rebuildable from the messages."""

    id: int
    conversation_id: int
    model_fingerprint: str
    template_fingerprint: str
    """Fingerprint of the chat template the tokens were rendered with."""
    token_count: int
    """Tokens the state holds."""
    prefix_hash: Optional[str]
    """Caller's hash of those token ids, to check they are still the conversation's prefix."""
    path: Path
    nbytes: int
    created_at: float
    last_used_at: float


@dataclass(frozen=True)
class SearchHit:
    """One message matching a search."""

    conversation_id: int
    message_id: int
    title: str
    role: Role
    snippet: str
    """Text around the match, matched terms wrapped in the markers given to `search`."""
