"""`ReplyWriter`: streams one assistant reply into the store so that a crash loses at most the
last fraction of a second.

The row is created with status `streaming` when the reply starts. Appended text is buffered and
flushed, in one short transaction, as soon as `flush_interval` (250 ms) has passed since the last
flush, so a steady stream reaches the disk at least every 250 ms. Text appended just before a
stall waits for the next `append`, `tick` or `finish`: the owner may call `tick()` on a timer.
`finish` writes the rest with the final status, token ids and stats. A row still `streaming` when
the store is next opened (the app was killed) becomes `interrupted`, keeping every flushed byte.

Why (LESSONS.md): GPT4All saved chats only on quit and a crash lost everything since launch;
LM Studio rewrites a whole JSON file per token; Ollama's app writes each chunk to SQLite with a
"still streaming" flag. This is the last, with the writes batched to a few per second. Each flush
also re-indexes the row for search (FTS triggers): well under a millisecond at 40k characters.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Protocol

from .errors import ReplyClosedError
from .records import FINAL_STATUSES, Message, ReplyStats, check_choice, check_text, token_ids_json


class ReplyStore(Protocol):
    """What a writer needs of its `Store` (which makes writers, so this module cannot import it)."""

    db: Any
    clock: Callable[[], float]

    def append_message(self, conversation_id: int, role: str, content: str, **fields: Any) -> Message: ...

    def get_message(self, message_id: int) -> Message: ...

    def messages(self, conversation_id: int) -> list[Message]: ...


FLUSH_INTERVAL_S = 0.25
"""Longest time appended text of a steady stream stays only in memory."""


class ReplyWriter:
    """Writes one streaming assistant reply. Made by `Store.start_reply(conversation_id)`;
    used on the store's thread like the store itself.

        reply = store.start_reply(conversation_id)
        for chunk in chunks:
            reply.append(chunk.text, chunk.reasoning)
        reply.finish("complete", token_ids=ids, stats=ReplyStats(ttft_s=0.2, tok_s=41.0))
    """

    def __init__(self, store: ReplyStore, message_id: int, *, flush_interval: float = FLUSH_INTERVAL_S,
                 monotonic: Callable[[], float] = time.monotonic):
        self._store = store
        self.message_id = message_id
        """Id of the `streaming` row this writer fills."""
        self.flush_interval = flush_interval
        self._monotonic = monotonic
        self._pending: list[str] = []
        self._pending_reasoning: list[str] = []
        self._thinking_since: Optional[float] = None  # first reasoning of this writer
        self._thought_s: Optional[float] = None  # until the answer began (or the last reasoning)
        self._thought_before = 0.0  # seconds thought before a continued reply was resumed
        self._answered = False  # the answer began after reasoning: the thinking time is final
        self._last_flush = monotonic()
        self.flushed_chars = 0
        """Characters of reply text committed to the database so far."""
        self.finished = False

    @classmethod
    def start(cls, store: ReplyStore, conversation_id: int, *, parent_id: Any, model: Optional[str] = None,
              **options: Any) -> "ReplyWriter":
        """Create the assistant row (status `streaming`, empty text) and a writer for it."""
        message = store.append_message(conversation_id, "assistant", "", status="streaming",
                                       parent_id=parent_id, model=model)
        return cls(store, message.id, **options)

    @classmethod
    def resume(cls, store: ReplyStore, message_id: int, **options: Any) -> "ReplyWriter":
        """Reopen a finished assistant reply that ends its branch (status back to `streaming`,
        text kept) and return a writer that appends to it."""
        message = store.get_message(message_id)
        branch = store.messages(message.conversation_id)
        if message.role != "assistant" or message.status == "streaming":
            raise ReplyClosedError(f"Message {message_id} is not a finished reply; only those can be continued.")
        if not branch or branch[-1].id != message_id:
            raise ReplyClosedError(f"Reply {message_id} is not the last message shown; only that one can be continued.")
        with store.db.atomic():
            store.db.execute("update messages set status = 'streaming', finish_reason = null, error = null, "
                             "updated_at = ? where id = ?", [store.clock(), message_id])
        writer = cls(store, message_id, **options)
        writer.flushed_chars = len(message.content)
        writer._thought_before = message.reasoning_s or 0.0
        return writer

    @property
    def pending_chars(self) -> int:
        """Characters appended but not yet flushed (answer and reasoning)."""
        return sum(len(p) for p in self._pending) + sum(len(p) for p in self._pending_reasoning)

    @property
    def thought_s(self) -> Optional[float]:
        """Seconds the model has thought so far in this reply: from its first reasoning to the
        start of its answer (or its latest reasoning); None while it has not thought."""
        if self._thinking_since is None:
            return None
        return self._thought_before + (self._thought_s or 0.0)

    def append(self, text: str, reasoning: str = "") -> bool:
        """Add reply text and reasoning text (kept apart); flush if `flush_interval` has passed.
        Returns True when it flushed."""
        self._check_open()
        check_text("reply text", text)
        check_text("reasoning", reasoning)
        now = self._monotonic()
        if reasoning:
            self._pending_reasoning.append(reasoning)
            if self._thinking_since is None:
                self._thinking_since = now
        if self._thinking_since is not None and (reasoning or text) and not self._answered:
            self._thought_s = now - self._thinking_since
        if text:
            self._pending.append(text)
            self._answered = self._answered or self._thinking_since is not None
        return self.tick()

    def tick(self) -> bool:
        """Flush if text is waiting and `flush_interval` has passed. Returns True when it flushed."""
        if (self._pending or self._pending_reasoning) and self._monotonic() - self._last_flush >= self.flush_interval:
            self.flush()
            return True
        return False

    def flush(self) -> int:
        """Commit buffered text now (one short transaction); return `flushed_chars`."""
        self._check_open()
        text = "".join(self._pending)
        if text or self._pending_reasoning:
            self._write(text, {})
            self.flushed_chars += len(text)
            self._pending.clear()
        self._last_flush = self._monotonic()
        return self.flushed_chars

    def finish(self, status: str = "complete", *, token_ids: Optional[Any] = None,
               stats: Optional[ReplyStats] = None, error: Optional[str] = None,
               finish_reason: Optional[str] = None) -> Message:
        """Write the remaining text with the final status (complete, interrupted, cancelled or
        error), the exact token ids, the stats and the engine's finish reason ("length": cut by
        the token limit), in one transaction; return the final row."""
        self._check_open()
        check_choice("status", status, FINAL_STATUSES)
        check_text("finish_reason", finish_reason, optional=True)
        final = {"status": status, "token_ids": token_ids_json(token_ids), "error": error,
                 "finish_reason": finish_reason, **(stats or ReplyStats()).columns()}
        text = "".join(self._pending)
        self._write(text, final)
        self.flushed_chars += len(text)
        self._pending.clear()
        self.finished = True
        return self._store.get_message(self.message_id)

    def cancel(self, *, token_ids: Optional[Any] = None, stats: Optional[ReplyStats] = None) -> Message:
        """Finish as `cancelled` (the user stopped it), keeping the text so far."""
        return self.finish("cancelled", token_ids=token_ids, stats=stats, finish_reason="cancelled")

    def fail(self, error: str, *, token_ids: Optional[Any] = None) -> Message:
        """Finish as `error` with a message to show, keeping the text so far."""
        return self.finish("error", token_ids=token_ids, error=error)

    def revert(self, before: Message) -> Message:
        """Put a reopened reply back as it was (`before`: its row before `resume`) when its
        continuation ended before writing anything: a Continue refused for a full context, or
        stopped at once, never turns a kept reply into a failure."""
        self._check_open()
        if self._pending or self._pending_reasoning or self.flushed_chars != len(before.content):
            raise ReplyClosedError(f"Reply {self.message_id} has new text; finish it instead of reverting it.")
        db = self._store.db
        with db.atomic():
            cursor = db.execute("update messages set status = :status, finish_reason = :reason, error = :error "
                                "where id = :id and status = 'streaming'",
                                {"status": before.status, "reason": before.finish_reason, "error": before.error,
                                 "id": self.message_id})
            if cursor.rowcount != 1:
                raise ReplyClosedError(f"Reply {self.message_id} is no longer streaming.")
        self.finished = True
        return self._store.get_message(self.message_id)

    def _write(self, text: str, final: dict[str, Any]) -> None:
        db, now = self._store.db, self._store.clock()
        reasoning = "".join(self._pending_reasoning)
        self._pending_reasoning.clear()
        if self.thought_s is not None:
            final = {**final, "reasoning_s": self.thought_s}
        sets = "".join(f", {column} = :{column}" for column in final)
        with db.atomic():
            cursor = db.execute(
                f"update messages set content = content || :text, reasoning = reasoning || :reasoning, "
                f"updated_at = :now{sets} where id = :id and status = 'streaming'",
                {"text": text, "reasoning": reasoning, "now": now, "id": self.message_id, **final})
            if cursor.rowcount != 1:
                raise ReplyClosedError(
                    f"Reply {self.message_id} is no longer streaming: its conversation was deleted "
                    f"or the reply was finished elsewhere.")
            if final:
                db.execute("update conversations set updated_at = ? where id = "
                           "(select conversation_id from messages where id = ?)", [now, self.message_id])

    def _check_open(self) -> None:
        if self.finished:
            raise ReplyClosedError(f"Reply {self.message_id} was already finished.")
