"""One request's reply: prompt tokens, a leased session, and its chunks carried into the event loop.

The engine's `Stream` is a blocking iterator fed by the engine thread. A small pump thread per reply
reads it and hands each chunk to the event loop (`call_soon_threadsafe`), so no event-loop thread
ever blocks on the engine and concurrent requests each have their own stream (the engine batches
them; there is no lock around it). Closing a reply early cancels it at the next token.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import AsyncIterator, Optional, Sequence

from .. import Chunk, Engine, GenerationStats, SamplingParams, Stream
from ..errors import CapacityError, EngineError
from ..handle import Failed
from ..reply.text import clean
from . import limits
from .errors import APIError, bad_request, capacity_full
from .image_input import text_length
from .pool import DELETED, Lease, SessionPool
from .stops import StopMatcher

DEFAULT_TEMPERATURE = 1.0  # OpenAI's default


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int

    def as_json(self) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
        }

    @classmethod
    def of(cls, stats: Optional[GenerationStats], fallback_prompt: int, generated: int) -> "Usage":
        if stats is None:
            return cls(fallback_prompt, generated, 0)
        return cls(stats.prompt_tokens, stats.generated_tokens, stats.prompt_tokens - stats.prefilled_tokens)


@dataclass(frozen=True)
class Piece:
    """Text to send; the last piece has a finish reason and the usage."""

    text: str
    finish_reason: Optional[str] = None
    usage: Optional[Usage] = None
    logprobs: tuple = ()
    """engine TokenLogprob of the tokens that came with this piece (when asked for)."""
    reasoning: str = ""
    """Reasoning text of a thinking model, sent apart as `reasoning_content` (stop strings apply
    only to the answer)."""


ENGINE_WATCH_S = 1.0
"""How often a running reply checks that the engine thread is still there (`Reply._check_engine`)."""


def interrupted(why: str) -> APIError:
    """A reply stopped before it finished: never "stop", so no client takes it for a whole reply."""
    status = 500 if why == DELETED else 503  # 503: the server is going away; retry once it is back
    return APIError(status, f"the reply was interrupted before it finished: {why}", "reply_interrupted",
                    "server_error")


def chat_prompt(engine: Engine, messages: list[dict], tools: Optional[list[dict]] = None,
                thinking: Optional[bool] = None, continue_final: bool = False) -> list[int]:
    """Token ids of `messages` (and `tools`) under the model's chat template, as the session will
    prefill them (message content and tool results as text), for pool matching and the context check."""
    if not getattr(engine.tokenizer, "chat_template", None):
        raise bad_request("this model has no chat template; use /v1/completions", "no_chat_template")
    limits.check_chars(engine, sum(text_length(m["content"]) for m in messages))
    return engine.chat_tokens(messages, continue_final=continue_final, tools=tools, thinking=thinking)


def text_prompt(engine: Engine, prompt) -> list[int]:
    """Token ids of a completions prompt: text (the tokenizer adds the model's usual prefix), or ids.
    A raw prompt is the client's own template, so its markers are control tokens."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
        return list(prompt)
    text = prompt[0] if isinstance(prompt, list) else prompt
    limits.check_chars(engine, len(text))
    return list(engine.tokenizer(clean(text), add_special_tokens=True).input_ids)


def check_context(engine: Engine, prompt: Sequence[int]) -> None:
    limit = engine.config.max_context
    if len(prompt) >= limit:
        raise APIError(400, f"the prompt has {len(prompt)} tokens; this model's context is {limit} tokens "
                            "(room is needed for the reply)", "context_length_exceeded")


def sampling(body, engine: Engine, prompt_len: int, limit: Optional[int]) -> SamplingParams:
    room = engine.config.max_context - prompt_len
    temperature = DEFAULT_TEMPERATURE if body.temperature is None else float(body.temperature)
    if body.top_p == 0:  # only the likeliest token is kept: that is greedy
        temperature = 0.0
    return SamplingParams(
        temperature=temperature,
        top_p=1.0 if not body.top_p else float(body.top_p),
        max_tokens=max(1, min(limit or room, room)),
        seed=body.seed,
        ignore_stop=body.ignore_eos,
        speculative=body.speculative,
        **penalties(body),
    )


def penalties(body) -> dict:
    """top-k, min-p and the penalties a request set (OpenAI's and llama.cpp server's names), as
    SamplingParams fields; what it left out keeps the engine's neutral default."""
    fields = {"top_k": body.top_k, "min_p": body.min_p, "repetition_penalty": body.penalty,
              "repeat_last_n": body.repeat_last_n, "presence_penalty": body.presence_penalty,
              "frequency_penalty": body.frequency_penalty}
    return {name: value for name, value in fields.items() if value is not None}


class Reply:
    """A running reply on a leased session; iterate `pieces()` on the event loop, `close()` when done."""

    def __init__(self, pool: SessionPool, lease: Lease, stream: Stream, stops: list[str], prompt_len: int) -> None:
        self._pool = pool
        self.lease = lease
        self._stream = stream
        self._matcher = StopMatcher(stops)
        self._prompt_len = prompt_len
        self._loop = asyncio.get_running_loop()
        self._queue: "asyncio.Queue[Chunk | Failed]" = asyncio.Queue()
        self._released = False
        self._failed = False
        # the engine thread hands each chunk to the loop itself: no thread per reply (chunk_queue.py)
        stream.listen(self._post)
        self._watch = self._loop.call_later(ENGINE_WATCH_S, self._check_engine)

    def _post(self, item) -> None:
        """On the engine thread: a chunk, or the `Failed` that ends the reply, into the loop's queue."""
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop is gone (server stopped): nobody is listening
            pass

    def _check_engine(self) -> None:
        """A backstop on the loop: the engine thread ends every reply before it stops, but if it died
        without doing so, the reply ends with an error instead of waiting for ever."""
        if self._released:
            return
        if not self._stream.engine_alive():
            self._queue.put_nowait(Failed(EngineError("the engine stopped before this reply finished")))
            return
        self._watch = self._loop.call_later(ENGINE_WATCH_S, self._check_engine)

    async def pieces(self) -> AsyncIterator[Piece]:
        """The reply's text as it comes, stop strings applied; ends with the finishing piece."""
        generated = 0
        try:
            while True:
                item = await self._queue.get()
                if isinstance(item, Failed):  # the session failed in a forward, or the engine stopped
                    self._failed = True
                    raise APIError(500, f"the reply failed: {item.error}", "generation_failed", "server_error")
                generated += len(item.token_ids)
                reasoning = "" if self._matcher.stopped else item.reasoning
                text = self._matcher.feed(item.text)
                if self._matcher.stopped and item.finish_reason is None:
                    # The rest is cut off: stop the engine at the next token, and keep reading to its
                    # last chunk, which carries the usage (closing the stream would end the pump early).
                    self.lease.session.cancel()
                if item.finish_reason is None:
                    if text or reasoning or item.logprobs:
                        yield Piece(text, logprobs=item.logprobs, reasoning=reasoning)
                    continue
                if item.finish_reason == "cancelled" and not self._matcher.stopped:
                    raise interrupted(self.lease.cut or "it was cancelled")
                text += self._matcher.flush()
                reason = "length" if item.finish_reason == "length" and not self._matcher.stopped else "stop"
                logprobs = item.logprobs if item.text else ()  # not the end token's
                yield Piece(text, reason, Usage.of(item.stats, self._prompt_len, generated), logprobs, reasoning)
                return
        finally:
            self.close()

    @property
    def stop_sequence(self) -> Optional[str]:
        """The stop string that ended the reply, if one did."""
        return self._matcher.matched

    def close(self) -> None:
        """Cancel the reply if it is still running (a dropped client) and give the session back."""
        if self._released:
            return
        self._released = True
        self._watch.cancel()
        self._stream.close()
        self._pool.release(self.lease, discard=self._failed)


def start(pool: SessionPool, session_id: Optional[str], owner: Optional[str], prompt: list[int],
          begin, max_tokens: int) -> tuple[Lease, Stream]:
    """Lease a session for `prompt` and start `begin(session) -> Stream` on it, returning once the
    engine admitted the turn (runs on a worker thread: opening a session and waiting out a cancelled
    reply may block for a token). The engine's refusal (CapacityError) is a 429 here, its
    Retry-After the time the running turns need (pool.retry_after)."""
    lease = pool.acquire(session_id, prompt, owner)
    try:
        stream = begin(lease.session)
        stream.admitted()  # a turn the shared K/V pool cannot hold is refused (429) before any 200
    except CapacityError as e:
        pool.release(lease, discard=not lease.session.tokens)  # a refused first request leaves nothing
        raise capacity_full(str(e), pool.retry_after()) from None
    except BaseException:
        pool.release(lease, discard=not lease.session.tokens)
        raise
    pool.began(lease, len(prompt), max_tokens)
    return lease, stream
