"""Session: a caller-side handle; its state lives on the engine thread.

Checks that need no compute (closed, busy, poisoned, context length, sampling values) run in the
caller's thread so errors are raised before anything is queued. Everything else is a request.
"""

from __future__ import annotations

import functools
import operator
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Protocol, Sequence

from .errors import (
    ContextOverflowError,
    EngineError,
    InvalidRequestError,
    SessionBusyError,
    SessionClosedError,
    SessionPoisonedError,
)
from . import image_prompt
from .chunk_queue import ChunkQueue
from .handle import Failed, SessionHandle
from .types import Chunk, EngineConfig, Reply, SamplingParams

if TYPE_CHECKING:
    from .image_prompt import ImageReader
    from .reply.text import TextCodec

# How often a reader waiting for a chunk checks that the engine thread is still alive (a backstop:
# the thread delivers an end or an error to every stream before it stops).
_LIVENESS_POLL_S = 1.0


class EngineLink(Protocol):
    """What a Session needs of its `Engine` (which makes sessions, so this module cannot import it)."""

    config: EngineConfig
    _codec: "TextCodec"
    _vocab_size: int
    _vision: Optional["ImageReader"]
    """What reads images into prompt pieces where the model takes them, else None."""
    _images_reason: str

    @property
    def _running(self) -> bool: ...

    @property
    def _thread(self) -> threading.Thread: ...

    def _post(self, fn: Callable): ...

    def _call(self, fn: Callable): ...


class Stream:
    """Iterator over one reply's chunks, fed by the engine thread through a thread-safe queue.

    Closing it (or dropping it) before the last chunk cancels the reply at the next token, so an
    abandoned iterator never leaves the session busy.
    """

    def __init__(
        self,
        out: "queue.Queue[Chunk | Failed]",
        cancel: threading.Event,
        alive: Optional[Callable[[], bool]] = None,
        started: Optional[Future] = None,
    ) -> None:
        self._out = out
        self._cancel = cancel
        self._alive = alive
        self._started = started
        self._done = False

    def __iter__(self) -> Iterator[Chunk]:
        return self

    def __next__(self) -> Chunk:
        if self._done:
            raise StopIteration
        item = self._next_item()
        if isinstance(item, Failed):
            self._done = True
            raise item.error
        if item.finish_reason is not None:
            self._done = True
        return item

    def _next_item(self) -> "Chunk | Failed":
        if self._alive is None:
            return self._out.get()
        while True:
            try:
                return self._out.get(timeout=_LIVENESS_POLL_S)
            except queue.Empty:
                if not self._alive():
                    try:
                        return self._out.get_nowait()
                    except queue.Empty:
                        return Failed(EngineError("the engine stopped before this reply finished"))

    def listen(self, fn: Callable[["Chunk | Failed"], None]) -> None:
        """Hand each chunk (or the `Failed` that ends the reply) to `fn` as it is made, instead of
        keeping it for iteration; chunks made before this go first, in order. `fn` runs on the
        thread that makes the chunk (the engine's): it must return at once and never call back into
        the stream, as `loop.call_soon_threadsafe` does (engine/chunk_queue.py says why). Do not
        iterate the stream afterwards; `engine_alive` tells a listener whether chunks can still come."""
        def deliver(item: "Chunk | Failed") -> None:
            if isinstance(item, Failed) or item.finish_reason is not None:
                self._done = True
            fn(item)

        if not isinstance(self._out, ChunkQueue):
            raise TypeError("only a stream over a ChunkQueue (every engine and remote session's) can be listened to")
        self._out.listen(deliver)

    def engine_alive(self) -> bool:
        """False once the engine thread has stopped (a listener's backstop: the thread ends every
        stream with a last chunk or an error before it stops)."""
        return self._alive is None or self._alive()

    def admitted(self, timeout: Optional[float] = None) -> None:
        """Wait until the engine has admitted this turn; raise its CapacityError if it was refused.

        Refusals come before any compute, so a server can answer them (429) before it commits to a
        reply (a streamed 200). Never call it on a GUI thread: it waits for the engine thread."""
        refusal = self._started.result(timeout) if self._started is not None else None
        if refusal is not None:
            self._done = True
            raise refusal

    def text(self) -> str:
        """Consume the rest of the reply and return its text (the answer, without reasoning)."""
        return "".join(chunk.text for chunk in self)

    def reply(self) -> Reply:
        """Consume the rest of the reply: its answer and its reasoning, apart."""
        chunks = list(self)
        last = chunks[-1] if chunks else None
        return Reply("".join(c.text for c in chunks), "".join(c.reasoning for c in chunks),
                     last.finish_reason if last else None, last.stats if last else None)

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._cancel.set()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class Session(SessionHandle):
    """One conversation's isolated state on a loaded model. Safe to call from any thread.

    Closed, busy, cancel and idle are `SessionHandle`'s, shared with the remote session."""

    def __init__(self, engine: EngineLink, session_id: int) -> None:
        super().__init__(session_id)
        self._engine = engine
        self._poisoned: Optional[str] = None
        # Written only by the engine thread, read anywhere (whole-object replacement is atomic).
        self._tokens: tuple[int, ...] = ()
        self._state_nbytes = 0
        self._chat_key: tuple[str, tuple[int, ...]] = ("", ())
        self._finalizer: Optional[weakref.finalize] = None

    def _watch(self, post_quietly: Callable[[Callable], None]) -> None:
        """Once open: a handle dropped without close() frees its slot. The finalizer only posts a
        request with `post_quietly` (the runner's: it may run on any thread, inside the garbage
        collector) and holds no reference to this handle."""
        self._finalizer = weakref.finalize(self, post_quietly, functools.partial(_close_slot, self.id))
        self._finalizer.atexit = False

    # -- what callers read -------------------------------------------------------------------------
    @property
    def tokens(self) -> list[int]:
        """Token ids of this session's history: prompt and reply tokens the state holds.

        The last sampled token of a reply is fed to the model lazily, at the start of the next turn.
        An image's positions are negative ids made from a hash of its bytes (engine/images.py): they
        compare like tokens, but `generate` takes vocabulary ids only (send images through `chat`).
        """
        return list(self._tokens)

    @property
    def state_nbytes(self) -> int:
        """Bytes its state holds now (0 before first use and after reset)."""
        return self._state_nbytes

    # -- generation --------------------------------------------------------------------------------
    def chat(self, messages: list[dict], params: Optional[SamplingParams] = None, *,
             continue_final: bool = False, tools: Optional[list[dict]] = None,
             thinking: Optional[bool] = None) -> Stream:
        """Stream the assistant's reply to `messages` (the whole conversation so far).

        `continue_final`: the last message is an assistant reply to extend rather than answer (it
        was cut by the token limit or stopped); its turn is left open and the stream is its rest.

        `tools`: OpenAI-shaped function tools the template shows the model; read calls from the
        reply with `engine.reply.toolcalls.parse(engine.tool_format, text)`, or force one with
        `engine.tool_constraint(...)` as the params' constraint.
        A thinking model's reasoning comes apart from its answer (`Chunk.reasoning`). An assistant
        message may carry its earlier `reasoning`; the chat template decides whether the model sees
        it again (most drop it). `thinking` is the Think switch (`Engine.thinking_switch` says
        whether this model has one); None keeps the template's default.

        A message's `content` may be a list of parts: `{"type": "text", "text": ...}` and
        `engine.image_part(bytes)` (PNG, JPEG, GIF or BMP), where the model takes images
        (`Engine.takes_images`). Each image is checked before anything is queued: an
        `ImageError` (unreadable, unsupported format, too large, a text-only model) says why, and
        the session stays as it was. An image is decoded once; a later turn that holds the same
        image at the same place reuses it (its ids come from a hash of its bytes).

        When the conversation extends what this session already holds, only the new part is
        prefilled; the exact token ids of earlier replies are reused, so re-rendering the template
        does not break the match.
        """
        codec = self._engine._codec
        messages, images = image_prompt.flatten(messages)  # checks every image first: nothing is queued for a bad one
        rendered = codec.render_traced(messages, continue_final=continue_final, tools=tools, thinking=thinking)
        text = rendered.text
        if continue_final:  # the reply goes on where it stopped: inside its reasoning or its answer
            last = messages[-1]
            inside = bool(last.get("reasoning")) and not last["content"]
            start = "reasoning" if inside and codec.reasoning.kind == "think" else "answer"
        else:
            start = codec.reply_start(thinking)
        splitter = codec.reasoning.splitter(start)
        key_text, key_tokens = self._chat_key
        keyed = bool(key_text) and text.startswith(key_text) and key_tokens == self._tokens
        new, spans = image_prompt.encode(codec, rendered, len(key_text) if keyed else 0, images,
                                         self._engine._vision, self._engine._images_reason)
        prompt = (list(key_tokens) if keyed else []) + new
        return self._start(prompt, params, chat_text=text, splitter=splitter, images=spans)

    def generate(self, prompt_token_ids: Sequence[int], params: Optional[SamplingParams] = None) -> Stream:
        """Stream a continuation of `prompt_token_ids` (the whole sequence, not only the new part)."""
        return self._start(_token_list(prompt_token_ids), params, chat_text=None)

    def _start(self, prompt: list[int], params: Optional[SamplingParams], chat_text: Optional[str],
               splitter=None, images: Optional[dict] = None) -> Stream:
        _check_params(params)
        params = params or SamplingParams()
        params.validate()
        if not prompt:
            raise InvalidRequestError("the prompt is empty")
        vocab = self._engine._vocab_size
        shown = {i for span in (images or {}).values() for i in span.ids}  # an image's ids, from its bytes
        if any(t >= vocab or t < 0 and t not in shown for t in prompt):
            raise InvalidRequestError(f"token ids must be in [0, {vocab})")
        if prompt[-1] < 0:
            raise InvalidRequestError("a prompt cannot end with an image: the model reads on from text")
        limit = self._engine.config.max_context
        if len(prompt) >= limit:
            raise ContextOverflowError(
                f"the prompt has {len(prompt)} tokens; max_context is {limit} (room is needed for the reply)"
            )
        guide = self._engine._guides.start(params.constraint) if params.constraint is not None else None
        cancel = self._begin()
        out: "queue.Queue[Chunk | Failed]" = ChunkQueue()
        try:
            requested = time.perf_counter()  # time to first token counts the wait in the queue too
            started = self._engine._post(lambda w: w.start_job(self, prompt, params, out, cancel, chat_text,
                                                                   requested, guide, splitter, images))
        except BaseException:
            self._mark_idle()
            raise
        return Stream(out, cancel, self._engine._thread.is_alive, started)

    def _check_usable(self) -> None:
        if self._closed:
            raise SessionClosedError(f"session {self.id} is closed")
        if self._poisoned:
            raise SessionPoisonedError(f"session {self.id} failed earlier ({self._poisoned}); call reset()")

    # -- control -----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Cancel any reply, free the state and clear a poisoned session."""
        if self._closed:
            raise SessionClosedError(f"session {self.id} is closed")
        self.cancel()
        self._engine._call(lambda w: w.reset(self))

    def save_state(self, path: str | Path) -> None:
        """Write this session's state, tokens and model fingerprint to `path` (atomically)."""
        with self._lock:
            self._check_usable()
            if self._busy:
                raise SessionBusyError(f"session {self.id} is generating; save its state when it is done")
        self._engine._call(lambda w: w.save_state(self, Path(path)))

    def close(self) -> None:
        """Cancel any reply, then free the state on the engine thread. Idempotent."""
        if not self._mark_closed():
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        self.cancel()
        try:
            self._engine._call(lambda w: w.close_session(self))
        except EngineError:
            if self._engine._running:
                raise
            # the engine is closed or failed: every state went with it

    def __repr__(self) -> str:
        return f"<Session {self.id} tokens={len(self._tokens)} busy={self._busy} closed={self._closed}>"


def _close_slot(session_id: int, worker) -> None:
    worker.close_slot(session_id)


def _check_params(params: object) -> None:
    if params is not None and not isinstance(params, SamplingParams):
        raise InvalidRequestError(
            f"params must be a SamplingParams or None, not {type(params).__name__}"
            + (" (use SamplingParams(**params))" if isinstance(params, dict) else "")
        )


def _token_list(ids: object) -> list[int]:
    """Token ids as Python ints; a float, bool or string is refused rather than silently truncated."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence) and not hasattr(ids, "__iter__"):
        raise InvalidRequestError(f"prompt_token_ids must be a sequence of integers, not {type(ids).__name__}")
    prompt = []
    for i, t in enumerate(ids):
        try:
            if isinstance(t, bool):
                raise TypeError
            prompt.append(operator.index(t))  # ints, numpy and torch integers; never a float
        except TypeError:
            raise InvalidRequestError(f"token ids must be integers; position {i} holds {t!r}") from None
    return prompt
