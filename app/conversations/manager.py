"""`ConversationManager`: which conversation holds which live engine session.

Threads: the manager uses the store, so it lives on the store's thread (the app's one-worker store
executor); every method, and the iteration of `reply`, runs there. The engine does its own work on
its own thread; the manager only waits on results.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from contextlib import closing
from typing import Callable, Iterator, Optional

from app.store import LEAF, Attachment, Message, ReplyStats, ReplyWriter, Store
from engine import AnyEngine, Chunk, Embedder, SamplingParams, Session
from engine import CapacityError, ReplyInterruptedError

from .context_policy import fit, stored_reason
from .errors import AllSessionsBusyError
from .prompt import chat_messages
from .sources import TOP, library_turn, with_sources
from .states import StateCache
from .tool_turn import CallReader, ToolOffer, last_step, no_offer, pending

log = logging.getLogger(__name__)

DEFAULT_STATE_BUDGET = 2 << 30
"""2 GiB of saved state files by default: many long conversations, a small share of a disk."""


class ConversationManager:
    """Maps conversations to live sessions of one engine, suspending to disk when it is full.

        manager = ConversationManager(engine, store, state_budget_bytes=512 << 20)
        session = manager.session_for(cid)       # live, restored, or fresh
        for chunk in manager.reply(cid, "Hello", SamplingParams(temperature=0)):
            ...
    """

    def __init__(self, engine: AnyEngine, store: Store, *, state_budget_bytes: int = DEFAULT_STATE_BUDGET,
                 closing: Optional[threading.Event] = None) -> None:
        self.engine = engine
        self.store = store
        self.closing = closing or threading.Event()
        """Set when the app quits: replies stopped from then on are stored `interrupted`, not
        `cancelled` (the user did not stop them; the next start shows them as cut off)."""
        self.states = StateCache(engine, store, state_budget_bytes)
        """Saved states on disk (save, restore, LRU trim to the budget)."""
        self._live: "OrderedDict[int, Session]" = OrderedDict()  # least recently used first
        self._replying: set[int] = set()  # conversations whose `reply` has not finished yet
        self.restores = 0
        """Sessions restored from a saved state since the manager started (for tests and stats)."""
        self.suspends = 0
        """Sessions suspended (saved if worth it, then closed) since the manager started."""
        self.tools_for: Callable[[Store, int, int], Optional[ToolOffer]] = no_offer
        """(store, conversation id, step) -> the tools that step of a reply may call (None: none).
        Runs on this thread; step 1 is a new reply, step n + 1 follows the results of step n's calls."""
        self.embedder_for: Callable[[], Optional[Embedder]] = lambda: None
        """The embedding model that searches conversations' libraries (None: replies read no passages)."""

    # -- sessions ----------------------------------------------------------------------------------
    def live_conversations(self) -> list[int]:
        """Conversations with a live session, least recently used first."""
        return list(self._live)

    def session_for(self, conversation_id: int) -> Session:
        """The conversation's live session; else one restored from its saved state; else a fresh
        one (whose first turn re-prefills from the text). Suspends the least recently used idle
        session first when the engine is full; raises AllSessionsBusyError when none is idle."""
        session = self._live.get(conversation_id)
        if session is not None and not session.closed:
            self._live.move_to_end(conversation_id)
            return session
        self._live.pop(conversation_id, None)
        self.store.get_conversation(conversation_id)  # NotFoundError before any engine work
        self._make_room(conversation_id)
        session = self._with_room(conversation_id, lambda: self.states.restore(conversation_id))
        if session is not None:
            self.restores += 1
        else:
            session = self.engine.open_session()
        self._live[conversation_id] = session
        return session

    def suspend(self, conversation_id: int) -> bool:
        """Save an idle conversation's state to disk and close its session, freeing a slot.
        False when it had no live session. Refuses (SessionBusyError) while it is generating."""
        session = self._live.get(conversation_id)
        if session is None:
            return False
        if not session.closed:
            self.states.save(conversation_id, session)  # a session busy generating raises here
        session.close()
        del self._live[conversation_id]
        self.suspends += 1
        return True

    def close(self) -> None:
        """Suspend every idle session and close the busy ones (their replies end as cancelled)."""
        for conversation_id, session in list(self._live.items()):
            if self._idle(conversation_id, session):
                self.suspend(conversation_id)
            else:
                session.close()
                self._live.pop(conversation_id, None)

    def _make_room(self, wanted: int) -> None:
        capacity = self.engine.capacity()
        if capacity.live_sessions < capacity.max_sessions:
            return
        for conversation_id, session in list(self._live.items()):  # least recently used first
            if self._idle(conversation_id, session):
                log.info("suspending conversation %s to make room for %s", conversation_id, wanted)
                self.suspend(conversation_id)
                return
        busy = sum(1 for c, s in self._live.items() if not self._idle(c, s))
        raise AllSessionsBusyError(wanted, capacity.live_sessions, capacity.max_sessions, busy)

    def _with_room(self, wanted: int, attempt: Callable[[], Optional[Session]]) -> Optional[Session]:
        """`attempt()`, retried after suspending the least recently used idle session each time it
        raises CapacityError (a shared K/V pool too full for a restore); the error passes through
        once no idle session holding tokens is left."""
        while True:
            try:
                return attempt()
            except CapacityError:
                if not self._suspend_for_pool(wanted):
                    raise

    def _suspend_for_pool(self, wanted: int) -> bool:
        """Suspend the least recently used idle session (never `wanted`'s, never a generating one)
        that holds tokens, so a shared pool has room; False when there is none."""
        for conversation_id, session in list(self._live.items()):  # least recently used first
            if conversation_id != wanted and self._idle(conversation_id, session) and session.tokens:
                log.info("suspending conversation %s: the K/V pool is too full for %s", conversation_id, wanted)
                self.suspend(conversation_id)
                return True
        return False

    def _drop(self, conversation_id: int, session: Session) -> None:
        """Close a session without saving it (after an error its state is not trusted); the next
        turn restores the last good saved state or re-prefills."""
        if self._live.get(conversation_id) is session:
            del self._live[conversation_id]
        try:
            session.close()
        except Exception:
            log.warning("closing the session of conversation %s failed", conversation_id, exc_info=True)

    def _idle(self, conversation_id: int, session: Session) -> bool:
        return conversation_id not in self._replying and not session.busy

    # -- one reply ---------------------------------------------------------------------------------
    def reply(self, conversation_id: int, user_text: Optional[str], params: Optional[SamplingParams] = None,
              *, parent_id: Optional[int] = LEAF, attachments: tuple[Attachment, ...] = (),
              attachments_from: Optional[int] = None, passages: int = TOP) -> Iterator[Chunk]:
        """Append the user's message, stream the assistant's reply into the store, and yield each
        chunk. The user's message follows `parent_id` (default: the end of the shown branch; an
        earlier message's parent makes it an edited version of that message). `user_text=None`
        answers the user message `parent_id` (default: the end of the shown branch, which must
        then be a user message): a regenerated reply, a new version beside the old ones, which
        are kept. The store row ends `complete` (or `cancelled` when the engine cancelled it, or
        the caller closed this iterator early) with the exact token ids, stats, finish reason and
        the model's name; any error marks it `error` and is re-raised. A full engine with no idle
        session raises AllSessionsBusyError before anything is stored. The user's message is
        stored with `attachments` (and copies of message `attachments_from`'s: an edit keeps them);
        a regenerated reply answers the same message, so it sees the same files. When the
        conversation has a library, up to `passages` of its passages are read with the question
        (sources.py) and stored with the reply."""
        if user_text is None:
            parent_id = _user_to_answer(self.store, conversation_id, parent_id)
        session = self.session_for(conversation_id)
        if user_text is not None:
            parent_id = self.store.append_message(conversation_id, "user", user_text, parent_id=parent_id,
                                                  attachments=attachments, attachments_from=attachments_from).id
        self._replying.add(conversation_id)
        writer = self.store.start_reply(conversation_id, parent_id=parent_id, model=self.engine.label)
        messages = self._history(conversation_id)
        messages = library_turn(self.engine, self.store, self.embedder_for, conversation_id, writer.message_id,
                                messages, params, passages)
        yield from self._stream(conversation_id, session, writer, messages, params, [], False,
                                self._offer(conversation_id, 1))

    def tool_step(self, conversation_id: int, message_id: int,
                  params: Optional[SamplingParams] = None) -> Iterator[Chunk]:
        """The model's next step once every call of the reply's last step has its result: the
        results go back to the model and what it writes (text, maybe more calls) goes on in the
        same reply row. Refuses (ValueError) while a call still waits, before any engine work."""
        message = self.store.get_message(message_id)
        if message.conversation_id != conversation_id or not message.tool_calls:
            raise ValueError(f"message {message_id} made no tool calls in conversation {conversation_id}")
        if pending(message.tool_calls):
            raise ValueError("a tool call of this reply has no result yet")
        history = with_sources(self._history(conversation_id), message.sources)  # what its first step read
        session = self.session_for(conversation_id)
        writer = self.store.continue_reply(message_id)
        self._replying.add(conversation_id)
        step = last_step(message.tool_calls) + 1
        yield from self._stream(conversation_id, session, writer, history, params, [], False,
                                self._offer(conversation_id, step), step, len(message.content))

    def _offer(self, conversation_id: int, step: int) -> Optional[ToolOffer]:
        if not hasattr(self.engine, "tool_constraint"):  # a remote engine takes no tools
            return None
        offer = self.tools_for(self.store, conversation_id, step)
        return offer if offer is not None and offer.tools else None

    def continue_reply(self, conversation_id: int, message_id: int,
                       params: Optional[SamplingParams] = None) -> Iterator[Chunk]:
        """Write more of a reply that was cut by the token limit, stopped or interrupted, into the
        same row; yields the new chunks. Warm when the session still holds the reply: the engine
        continues its open turn without re-reading anything. Only the last message shown can be
        continued (ReplyClosedError otherwise, before any engine work)."""
        message = self.store.get_message(message_id)
        if message.conversation_id != conversation_id:
            raise ValueError(f"message {message_id} is not in conversation {conversation_id}")
        history = with_sources(self._history(conversation_id), message.sources)  # ends with the reply, unless empty
        session = self.session_for(conversation_id)
        writer = self.store.continue_reply(message_id)
        self._replying.add(conversation_id)
        extend = bool(history) and history[-1]["role"] == "assistant"
        token_ids = list(message.token_ids or ()) if extend else []
        yield from self._stream(conversation_id, session, writer, history, params, token_ids, extend,
                                before=message)

    def _stream(self, conversation_id: int, session: Session, writer: ReplyWriter, messages: list[dict],
                params: Optional[SamplingParams], token_ids: list[int], extend: bool,
                offer: Optional[ToolOffer] = None, step: int = 1, written: int = 0,
                before: Optional[Message] = None) -> Iterator[Chunk]:
        """Run one reply (or the rest of one) into `writer`, finishing the row however it ends.
        With `offer`, the step may call tools: the user reads the text around the calls, and the
        calls are stored with the reply (`written`: characters of it before this step), which
        then finishes with reason "tool_calls". `before`: the reply a Continue reopened; when the
        continuation ends before its first chunk (refused: the context is full), the reply goes
        back to how it was instead of becoming a failure."""
        produced = False

        def end(finish: Callable[[], object]) -> None:
            if writer.finished:
                return
            if before is not None and not produced:
                writer.revert(before)
            else:
                finish()

        reader = CallReader(self.engine.tool_format) if offer is not None else None
        try:
            extra = {"continue_final": True} if extend else {}  # plain replies: the basic chat() call
            thinking = self._thinking(conversation_id)
            if thinking is not None:
                extra["thinking"] = thinking
            if offer is not None:
                extra["tools"] = list(offer.tools)
                if offer.forced:
                    params = dataclasses.replace(params or SamplingParams(),
                                                 constraint=self.engine.tool_constraint(list(offer.tools), parallel=False))
            messages = fit(self.engine, self.store, conversation_id, writer.message_id, messages, params, extra)
            # closing(): a reader that stops early must cancel the engine's stream before we wait
            with closing(self._chat_with_room(conversation_id, session, messages, params, extra)) as chunks:
                for chunk in chunks:
                    produced = True
                    token_ids.extend(chunk.token_ids)
                    if reader is not None:
                        chunk = self._read_calls(reader, chunk, writer, offer, step, written)
                        written += len(chunk.text)
                    writer.append(chunk.text, chunk.reasoning)
                    if chunk.finish_reason is not None:
                        status = self._stopped_status() if chunk.finish_reason == "cancelled" else "complete"
                        writer.finish(status, token_ids=token_ids, stats=_stats(chunk),
                                      finish_reason=stored_reason(chunk, self.engine.max_context))
                    yield chunk
        except CapacityError as e:
            end(lambda: writer.fail(f"{type(e).__name__}: {e}", token_ids=token_ids))
            if produced:
                self._drop(conversation_id, session)
            # else refused before any compute with nothing left to suspend: the engine left the
            # session as it was, so it stays live for the next turn
            raise
        except GeneratorExit:  # the caller stopped reading: keep what was said
            end(lambda: writer.finish(self._stopped_status(), token_ids=token_ids, finish_reason="cancelled"))
            _wait_until_idle(session)  # so the session can be suspended as soon as this returns
            raise
        except ReplyInterruptedError as e:  # e.g. a remote server's connection dropped: keep the text
            end(lambda: writer.finish("interrupted", token_ids=token_ids, error=str(e)))
            self._drop(conversation_id, session)
            raise
        except BaseException as e:
            end(lambda: writer.fail(f"{type(e).__name__}: {e}", token_ids=token_ids))
            self._drop(conversation_id, session)  # a failed session is not reused; disk state is
            raise
        finally:
            self._replying.discard(conversation_id)

    def _read_calls(self, reader: CallReader, chunk: Chunk, writer: ReplyWriter, offer: ToolOffer,
                    step: int, written: int) -> Chunk:
        """The chunk as the user reads it (calls taken out); on the last one, the calls are stored
        and the reply ends with reason "tool_calls"."""
        text = reader.feed(chunk.text)
        if chunk.finish_reason is None:
            return dataclasses.replace(chunk, text=text)
        text += reader.finish()
        calls = reader.calls(offer, step, written + len(text)) if chunk.finish_reason != "cancelled" else []
        if not calls:
            return dataclasses.replace(chunk, text=text)
        self.store.add_tool_calls(writer.message_id, tuple(calls))
        return dataclasses.replace(chunk, text=text, finish_reason="tool_calls")

    def _chat_with_room(self, conversation_id: int, session: Session, messages: list[dict],
                        params: Optional[SamplingParams], extra: dict) -> Iterator[Chunk]:
        """The turn's chunks. A turn refused before its first chunk because the engine's shared K/V
        pool is full (llama.cpp admits each turn by tokens) is retried after suspending the least
        recently used idle session, until it fits or none is left; then the refusal passes through."""
        while True:
            started = False
            try:
                with session.chat(messages, params, **extra) as stream:
                    for chunk in stream:
                        started = True
                        yield chunk
                return
            except CapacityError:
                if started or not self._suspend_for_pool(conversation_id):
                    raise

    def _history(self, conversation_id: int) -> list[dict]:
        """What the model reads of the conversation: its images too where it takes images."""
        return chat_messages(self.store, conversation_id, images=bool(getattr(self.engine, "takes_images", False)))

    def _thinking(self, conversation_id: int) -> Optional[bool]:
        """The conversation's Think switch, where the model has one (None: the model's default)."""
        if not getattr(self.engine, "thinking_switch", False):
            return None
        return self.store.get_conversation(conversation_id).thinking

    def _stopped_status(self) -> str:
        return "interrupted" if self.closing.is_set() else "cancelled"


def _user_to_answer(store: Store, conversation_id: int, parent_id: Optional[int]) -> int:
    """The user message a regenerated reply answers; refuses, before anything is stored or
    computed, a history with nothing to answer."""
    if parent_id is LEAF:
        branch = store.messages(conversation_id)
        parent_id = branch[-1].id if branch else None
    message = store.get_message(parent_id) if parent_id is not None else None
    if message is None or message.role != "user" or message.conversation_id != conversation_id:
        raise ValueError(f"conversation {conversation_id} does not end with a user message to answer")
    return message.id


def _wait_until_idle(session: Session, timeout_s: float = 10.0) -> None:
    """Wait for a cancelled reply to end; the engine stops it at the next token boundary."""
    session.wait_idle(timeout_s)


def _stats(chunk: Chunk) -> Optional[ReplyStats]:
    s = chunk.stats
    if s is None:
        return None
    return ReplyStats(ttft_s=s.ttft_s, tok_s=s.decode_tok_s, prompt_tokens=s.prompt_tokens,
                      completion_tokens=s.generated_tokens)
