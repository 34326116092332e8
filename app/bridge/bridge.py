"""`Bridge`: the store thread, the conversations manager on it, and background requests whose
callbacks run on the GUI thread.

Threads:
- GUI thread: creates the Bridge, builds requests, receives every callback (through `GuiRoute`).
- store thread: one worker of a `ThreadPoolExecutor`. It opens the store and owns it and the
  `ConversationManager`; "one job at a time" is the locking scheme for both.
- engine thread: owned by the engine; the store thread only waits on its results.

Replies are streamed one chunk per store-thread job: a job reads the next chunk of one reply, hands
it to the GUI and queues the reply's next step behind whatever else is waiting. So several replies
stream at once (the engine interleaves their decode steps; the store thread takes their chunks in
turn) and other store work (listing, loading messages) is never stuck behind a whole reply, only
behind one token of each running reply.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, Iterator, Optional, TypeVar

from app.conversations import ConversationManager
from app.settings.app_settings import with_overrides
from app.store import Attachment, Message, OpenResult, Store, open_store
from engine import Chunk, Engine, GenerationStats, SamplingParams, Session

from .route import GuiRoute

log = logging.getLogger(__name__)
T = TypeVar("T")


class EngineNotReadyError(RuntimeError):
    """A reply was asked for before the model finished loading."""


class ReplyRunningError(RuntimeError):
    """A conversation already has a reply streaming; stop it or wait."""


@dataclass(frozen=True)
class Finished:
    """How one reply ended (given to `Send.success`)."""

    conversation_id: int
    text: str
    """The whole reply as streamed."""
    finish_reason: str
    """"stop", "length", "cancelled", ... as the engine said; "cancelled" when stopped early."""
    stats: Optional[GenerationStats]
    """TTFT and speed of the reply; None when it was stopped before the engine reported them."""
    reasoning: str = ""
    """What a thinking model wrote before its answer ("" for others), as streamed."""


class Job(Generic[T]):
    """Store work started by `Bridge.run(fn)`: `fn(store)` runs on the store thread, then
    `success(result)` or `failure(error)` on the GUI thread. Attach both in the same GUI-thread
    turn that called `run` (they are looked up when the result arrives, never earlier)."""

    def __init__(self, bridge: "Bridge") -> None:
        self._bridge = bridge
        self._success: Optional[Callable[[T], Any]] = None
        self._failure: Optional[Callable[[BaseException], Any]] = None

    def success(self, cb: Callable[[T], Any]) -> "Job[T]":
        self._success = cb
        return self

    def failure(self, cb: Callable[[BaseException], Any]) -> "Job[T]":
        self._failure = cb
        return self

    def _done(self, result: T) -> None:
        if self._success is not None:
            self._success(result)

    def _failed(self, error: BaseException) -> None:
        (self._failure or self._bridge.unhandled_error)(error)


class Send:
    """One reply, streamed: `Send(bridge, cid, "Hi").on_chunk(f).success(g).failure(h).run()`.

    Every callback runs on the GUI thread: `on_chunk(Chunk)` per chunk, then exactly one of
    `success(Finished)` (also after a stop: the reply is kept, marked cancelled) or
    `failure(error)`; a failure with no handler goes to `bridge.unhandled_error`.
    """

    def __init__(self, bridge: "Bridge", conversation_id: int, text: Optional[str],
                 params: Optional[SamplingParams] = None, attachments: tuple[Attachment, ...] = ()) -> None:
        self.bridge = bridge
        self.conversation_id = conversation_id
        self.text = text
        """The new user message; None answers the stored history as it is."""
        self.attachments = tuple(attachments)
        """Files sent with the new user message (stored with it)."""
        self.params = params
        """Sampling for this reply; None: the conversation's own settings over `bridge.params`."""
        self._open: Callable[[ConversationManager, Optional[SamplingParams]], Iterator[Chunk]] = (
            lambda manager, p: manager.reply(conversation_id, text, p, attachments=self.attachments))  # store thread
        self._on_chunk: Optional[Callable[[Chunk], Any]] = None
        self._success: Optional[Callable[[Finished], Any]] = None
        self._failure: Optional[Callable[[BaseException], Any]] = None
        self._stop = threading.Event()
        self._session: Optional[Session] = None  # set on the store thread, read by stop()
        self._chunks: Optional[Iterator[Chunk]] = None  # store thread only
        self._reply: list[str] = []  # store thread only
        self._reasoning: list[str] = []  # store thread only

    @classmethod
    def regenerate(cls, bridge: "Bridge", conversation_id: int, message_id: Optional[int] = None,
                   params: Optional[SamplingParams] = None, passages: Optional[int] = None) -> "Send":
        """A new answer to the user message reply `message_id` answered (None: the last user message
        shown): a new version of that reply, which is kept with what followed it (the message then
        shows "‹ 2/2 ›"; the old branch is one step back). `passages`: how many of the library's
        passages it may read (None: as many as a reply does)."""
        send = cls(bridge, conversation_id, None, params)
        more = {} if passages is None else {"passages": passages}
        send._open = lambda manager, p: manager.reply(
            conversation_id, None, p, parent_id=_answered(manager.store, conversation_id, message_id), **more)
        return send

    @classmethod
    def edit(cls, bridge: "Bridge", conversation_id: int, message_id: int, text: str,
             params: Optional[SamplingParams] = None) -> "Send":
        """Send an edited user message and answer it: a new version of that message, beside the
        old one, which is kept with everything after it (another branch). The new version keeps
        the old one's attached files."""
        send = cls(bridge, conversation_id, text, params)
        send._open = lambda manager, p: manager.reply(
            conversation_id, text, p, parent_id=_editable(manager.store, message_id).parent_id,
            attachments_from=message_id)
        return send

    @classmethod
    def continue_reply(cls, bridge: "Bridge", conversation_id: int, message_id: int,
                       params: Optional[SamplingParams] = None) -> "Send":
        """Write more of a reply cut by the token limit, stopped or interrupted, in place."""
        send = cls(bridge, conversation_id, None, params)
        send._open = lambda manager, p: manager.continue_reply(conversation_id, message_id, p)
        return send

    @classmethod
    def tool_step(cls, bridge: "Bridge", conversation_id: int, message_id: int,
                  params: Optional[SamplingParams] = None) -> "Send":
        """The model's next step after the results of its tool calls, written into the same reply."""
        send = cls(bridge, conversation_id, None, params)
        send._open = lambda manager, p: manager.tool_step(conversation_id, message_id, p)
        return send

    def on_chunk(self, cb: Callable[[Chunk], Any]) -> "Send":
        self._on_chunk = cb
        return self

    def success(self, cb: Callable[[Finished], Any]) -> "Send":
        self._success = cb
        return self

    def failure(self, cb: Callable[[BaseException], Any]) -> "Send":
        self._failure = cb
        return self

    def run(self) -> "Send":
        """Start streaming (call on the GUI thread)."""
        self.bridge._start_reply(self)
        return self

    def stop(self) -> None:
        """Stop at the next token; what was said is kept and stored as cancelled. Any thread."""
        self._stop.set()
        session = self._session
        if session is not None:
            session.cancel()


class Bridge:
    """Owns the store thread; the app's only way to reach the store, the manager and replies.

        bridge = Bridge(home)                     # GUI thread; the store opens on the store thread
        bridge.attach_engine(engine)              # once the model is loaded
        bridge.run(lambda store: store.list_conversations()).success(show)
        Send(bridge, cid, "Hi").on_chunk(append).success(done).run()
        bridge.stop(cid)
        bridge.close()
    """

    def __init__(self, home: Optional[Path] = None, *, params: Optional[SamplingParams] = None) -> None:
        self.route = GuiRoute()
        self.params = params
        """Sampling used by a `Send` that names none (None: the engine's defaults)."""
        self.unhandled_error: Callable[[BaseException], Any] = _log_error
        """Called on the GUI thread for a failure no request handles (the window shows it)."""
        self.tools_for: Optional[Callable[[Store, int, int], Any]] = None
        """(store, conversation id, step) -> the `ToolOffer` of that step of a reply (app/mcp sets
        it); called on the store thread. None: replies are offered no tools."""
        self.embedder_for: Optional[Callable[[], Any]] = None
        """() -> the embedding model that searches conversations' libraries (app/library sets it);
        called on the store thread. None: replies read no passages."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="confab-store")
        self._store: Optional[Store] = None  # store thread only
        self._manager: Optional[ConversationManager] = None  # store thread only
        self._replies: dict[int, Send] = {}  # GUI thread only
        self._closed = False
        self._closing = threading.Event()  # replies stopped by closing are stored `interrupted`
        self.opened: Future[OpenResult] = self._executor.submit(self._open, home)
        """The store thread's open_store() result (problem, path, interrupted replies)."""

    # -- store work --------------------------------------------------------------------------------
    def run(self, fn: Callable[[Store], T]) -> Job[T]:
        """Run `fn(store)` on the store thread; attach `.success(cb)` / `.failure(cb)` to the result."""
        job: Job[T] = Job(self)
        self._submit(self._run_job, job, fn)
        return job

    def submit(self, fn: Callable[[Store], T]) -> "Future[T]":
        """Run `fn(store)` on the store thread for a background thread that waits on its result
        (the library's indexing thread). Never wait on it from the GUI thread: use `run` there."""
        def call() -> T:
            self.opened.result()
            return fn(self._store)
        return self._executor.submit(call)

    def attach_engine(self, engine: Engine, state_budget_bytes: Optional[int] = None) -> Job[None]:
        """Give the store thread its ConversationManager for `engine` (after the model loads).
        A previous engine's sessions are suspended to disk first; stop its replies before."""
        def attach(store: Store) -> None:
            if self._manager is not None:
                self._manager.close()
            budget = {} if state_budget_bytes is None else {"state_budget_bytes": state_budget_bytes}
            self._manager = ConversationManager(engine, store, closing=self._closing, **budget)
            self._manager.tools_for = lambda s, cid, step: self.tools_for(s, cid, step) if self.tools_for else None
            self._manager.embedder_for = lambda: self.embedder_for() if self.embedder_for else None
        return self.run(attach)

    # -- replies -----------------------------------------------------------------------------------
    def replying(self) -> list[int]:
        """Conversations with a reply streaming now (GUI thread)."""
        return list(self._replies)

    def stop(self, conversation_id: int) -> bool:
        """Stop the conversation's running reply; False when none runs."""
        send = self._replies.get(conversation_id)
        if send is None:
            return False
        send.stop()
        return True

    def close(self) -> None:
        """Stop every reply (kept as cancelled), suspend live sessions, close the store; waits for
        the store thread (a token per running reply plus the saves). Callbacks are dropped."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        self.route.close()
        for send in list(self._replies.values()):
            send.stop()
        self._executor.submit(self._shutdown)
        self._executor.shutdown(wait=True)

    # -- GUI thread helpers ------------------------------------------------------------------------
    def _start_reply(self, send: Send) -> None:
        cid = send.conversation_id
        if cid in self._replies:
            self.route.post(self._reply_failed, send, ReplyRunningError(
                f"conversation {cid} already has a reply streaming; stop it or wait"))
            return
        self._replies[cid] = send
        self._submit(self._step, send)

    def _reply_done(self, send: Send, finished: Finished) -> None:
        self._forget(send)
        if send._success is not None:
            send._success(finished)

    def _reply_failed(self, send: Send, error: BaseException) -> None:
        self._forget(send)
        (send._failure or self.unhandled_error)(error)

    def _forget(self, send: Send) -> None:
        if self._replies.get(send.conversation_id) is send:
            del self._replies[send.conversation_id]

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self._executor.submit(fn, *args)
        except RuntimeError:  # shut down: the app is closing
            log.debug("store thread is closed; dropped %s", fn)

    # -- store thread ------------------------------------------------------------------------------
    def _open(self, home: Optional[Path]) -> OpenResult:
        opened = open_store(home)
        self._store = opened.store
        return opened

    def _run_job(self, job: Job, fn: Callable[[Store], Any]) -> None:
        try:
            self.opened.result()  # re-raises why the store could not open
            result = fn(self._store)
        except BaseException as e:
            self.route.post(job._failed, e)
        else:
            self.route.post(job._done, result)

    def _step(self, send: Send) -> None:
        """Read one chunk of `send`'s reply and queue the next step behind other store work."""
        try:
            if send._chunks is None:
                if self._manager is None:
                    raise EngineNotReadyError("the model is still loading")
                send._session = self._manager.session_for(send.conversation_id)
                params = send.params or self._params_for(send.conversation_id)
                send._chunks = send._open(self._manager, params)
                if send._stop.is_set():
                    send._session.cancel()
            chunk = next(send._chunks)
        except StopIteration:  # ended without a finish reason: treat as stopped
            return self._finish(send, "cancelled", None)
        except BaseException as e:
            return self.route.post(self._reply_failed, send, e)
        if send._stop.is_set():  # a stop before the engine saw it (or during the first prefill)
            send._session.cancel()
        send._reply.append(chunk.text)
        send._reasoning.append(chunk.reasoning)
        self.route.post(_call, send._on_chunk, chunk)
        if chunk.finish_reason is not None:
            for _ in send._chunks:  # let the manager finish its bookkeeping
                pass
            return self._finish(send, chunk.finish_reason, chunk.stats)
        if self._closed:  # shutting down: end it here, stored as cancelled
            send._chunks.close()
            return self._finish(send, "cancelled", None)
        self._submit(self._step, send)

    def _params_for(self, conversation_id: int) -> Optional[SamplingParams]:
        """The conversation's own sampling settings over the app's defaults (`self.params`)."""
        own = self._store.get_conversation(conversation_id).sampling
        return with_overrides(self.params or SamplingParams(), own) if own else self.params

    def _finish(self, send: Send, reason: str, stats: Optional[GenerationStats]) -> None:
        finished = Finished(send.conversation_id, "".join(send._reply), reason, stats, "".join(send._reasoning))
        self.route.post(self._reply_done, send, finished)

    def _shutdown(self) -> None:
        if self._manager is not None:
            self._manager.close()
        if self._store is not None:
            self._store.close()


def _answered(store: Store, conversation_id: int, message_id: Optional[int]) -> int:
    """The user message to answer again: the one reply `message_id` answered, else the last one."""
    if message_id is None:
        return _last_user(store, conversation_id)
    reply = store.get_message(message_id)
    if reply.role != "assistant" or reply.conversation_id != conversation_id or reply.parent_id is None:
        raise ValueError("only a reply to one of your messages can be written again")
    return reply.parent_id


def _last_user(store: Store, conversation_id: int) -> int:
    users = [m for m in store.messages(conversation_id) if m.role == "user"]
    if not users:
        raise ValueError("there is no message to answer again")
    return users[-1].id


def _editable(store: Store, message_id: int) -> Message:
    message = store.get_message(message_id)
    if message.role != "user":
        raise ValueError("only your own messages can be edited and sent again")
    return message


def _call(cb: Optional[Callable[..., Any]], *args: Any) -> None:
    if cb is not None:
        cb(*args)


def _log_error(error: BaseException) -> None:
    log.error("background work failed: %s", error, exc_info=error)
