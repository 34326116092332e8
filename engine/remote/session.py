"""RemoteSession: one conversation streamed from a remote OpenAI-compatible server.

It has the local Session's shape (chat → Stream, cancel, close, busy, wait_idle) so the app treats
both alike. A reply is read by a thread of its own from the `openai` client's stream and handed over
through the same thread-safe queue and `Stream` as the local engine's, so a caller never blocks on
the network except while waiting for the next chunk.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any, Optional, Protocol

import httpx
import openai

from ..chunk_queue import ChunkQueue
from ..reply.reasoning import ThinkSplitter
from ..errors import InvalidRequestError, SessionClosedError, StateFileError
from ..handle import Failed, SessionHandle
from ..session import Stream
from ..types import Chunk, GenerationStats, SamplingParams
from .images import openai_content
from .errors import ConnectionLostError, ReplyCutError, explain, host_of

log = logging.getLogger(__name__)
_FINISH = {"stop": "stop", "length": "length"}  # anything else the server says (tool_calls, ...) is "stop"
_CUT = {"abort", "error", "cancelled", "interrupted"}  # reasons servers give for a reply they cut short


class RemoteLink(Protocol):
    """What a RemoteSession needs of its `RemoteEngine` (which makes sessions, so this module cannot
    import it)."""

    base_url: str
    client: openai.OpenAI

    @property
    def model_name(self) -> str: ...

    def _forget(self, session: "RemoteSession") -> None: ...


class RemoteSession(SessionHandle):
    """A conversation on a remote server. The server holds no state for it between replies: each
    turn sends the whole history (the server's prefix cache makes that cheap). Closed, busy,
    cancel and idle are `SessionHandle`'s, shared with the local session."""

    def __init__(self, engine: RemoteLink, session_id: int) -> None:
        super().__init__(session_id)
        self._engine = engine
        self._response: Any = None  # the openai stream being read, closed by cancel()

    @property
    def tokens(self) -> list[int]:
        """Always empty: the server keeps the tokens, this side only the text."""
        return []

    @property
    def state_nbytes(self) -> int:
        return 0

    def chat(self, messages: list[dict], params: Optional[SamplingParams] = None, *,
             continue_final: bool = False, tools: Optional[list[dict]] = None,
             thinking: Optional[bool] = None) -> Stream:
        """Stream the server's reply to `messages` (the whole conversation so far).

        Reasoning comes back apart in `Chunk.reasoning`: read from the server's `reasoning_content`
        (llama.cpp's server, DeepSeek's API, Confab; vLLM's and Ollama's `reasoning`), or split here
        from `<think>` tags at the start of the content. Earlier replies' reasoning is not sent
        (DeepSeek's API refuses it). `thinking` is accepted and not sent (`thinking_switch` is False).

        `continue_final` (extend the last, cut assistant reply in place) has no common form in the
        OpenAI API, so a remote engine refuses it by name rather than answering something else; so
        are `tools`, grammars other than a JSON schema, and log probabilities, which this reader of
        text deltas would drop. A JSON-schema constraint goes to the server as `response_format`."""
        if continue_final:
            raise InvalidRequestError("a reply from a server cannot be continued in place; regenerate it instead")
        params = params or SamplingParams()
        params.validate()
        _check_remote(params, tools)
        if not messages:
            raise InvalidRequestError("the conversation is empty")
        cancel = self._begin()
        out: "queue.Queue[Chunk | Failed]" = ChunkQueue()
        sent = [{k: openai_content(v) if k == "content" else v for k, v in m.items() if k != "reasoning"}
                for m in messages]  # images as data URLs, checked here as a local engine checks them
        threading.Thread(target=self._read, args=(sent, params, out, cancel),
                         name=f"confab-remote-{self.id}", daemon=True).start()
        return Stream(out, cancel)

    def generate(self, prompt_token_ids, params: Optional[SamplingParams] = None) -> Stream:
        raise InvalidRequestError("a remote engine takes messages, not token ids")

    def _read(self, messages: list[dict], params: SamplingParams, out: queue.Queue, cancel: threading.Event) -> None:
        """Reader thread: request, then forward each text delta as a Chunk until the finish."""
        engine = self._engine
        started = time.perf_counter()
        first: Optional[float] = None
        pieces = 0
        finish: Optional[str] = None
        usage = None
        response = None
        splitter = ThinkSplitter()  # a server that leaves <think> inline in the content
        try:
            response = engine.client.chat.completions.create(
                model=engine.model_name, messages=messages, stream=True,
                stream_options={"include_usage": True}, **request_options(params))
            self._response = response
            if cancel.is_set():
                response.close()
            for event in response:
                if event.usage is not None:
                    usage = event.usage
                for choice in event.choices:
                    thought, text = _delta(choice.delta, splitter)
                    if text or thought:
                        first = first or time.perf_counter()
                        pieces += 1
                        out.put(Chunk(text=text, token_ids=(), reasoning=thought))
                    if choice.finish_reason in _CUT:
                        raise ReplyCutError(f"the server at {host_of(engine.base_url)} interrupted the reply "
                                            f"(finish reason {choice.finish_reason!r})")
                    if choice.finish_reason is not None:
                        finish = _FINISH.get(choice.finish_reason, "stop")
                if cancel.is_set():
                    break
        except BaseException as e:
            if not cancel.is_set():
                self._end(out, Failed(self._failure(e, began=response is not None)))
                return
        finally:
            self._response = None
            if response is not None:
                _close_quietly(response)  # frees the connection; after a cancel the server stops too
        if finish is None and not cancel.is_set():
            where = engine.base_url
            return self._end(out, Failed(ConnectionLostError(
                f"the server at {where} ended the reply without finishing it (connection lost)")))
        done = time.perf_counter()
        generated = usage.completion_tokens if usage is not None else pieces
        prompt = usage.prompt_tokens if usage is not None else 0
        decode_s = done - first if first is not None else 0.0
        stats = GenerationStats(
            prompt_tokens=prompt, prefilled_tokens=prompt, generated_tokens=generated,
            ttft_s=(first or done) - started,
            decode_tok_s=(generated - 1) / decode_s if generated > 1 and decode_s > 0 else 0.0)
        reason = finish if finish is not None else "cancelled"  # a stop after the last token changes nothing
        thought, text = splitter.flush()
        self._end(out, Chunk(text=text, token_ids=(), finish_reason=reason, stats=stats, reasoning=thought))

    def _failure(self, error: BaseException, *, began: bool) -> BaseException:
        """The named error; a transport error after the stream began means the connection dropped."""
        if began and type(error) is openai.APIError:  # an error event inside the stream: the server cut it
            return ReplyCutError(f"the server at {host_of(self._engine.base_url)} interrupted the reply: "
                                 f"{error.message}")
        named = explain(error, self._engine.base_url)
        if began and not isinstance(named, ConnectionLostError) and _transport(error):
            # It was connected: "could not connect" (what `explain` says before a reply) would mislead.
            cause = error.__cause__ if isinstance(error, openai.APIConnectionError) and error.__cause__ else error
            return ConnectionLostError(f"the server at {host_of(self._engine.base_url)} stopped mid-reply: "
                                       f"the connection closed before the reply finished ({cause})")
        return named

    def _end(self, out: queue.Queue, item) -> None:
        self._mark_idle()
        out.put(item)

    def cancel(self) -> None:
        """Stop the running reply: the stream is closed, so the server stops generating too."""
        event = self._cancel
        if event is None or event.is_set():
            return
        event.set()
        response = self._response
        if response is not None:
            _close_quietly(response)  # the reader thread sees the closed stream and ends as cancelled

    def reset(self) -> None:
        """Nothing is held on this side; only a running reply is stopped."""
        if self._closed:
            raise SessionClosedError(f"session {self.id} is closed")
        self.cancel()

    def save_state(self, path: str | Path) -> None:
        raise StateFileError("a remote engine cannot save a session's state; the history is resent instead")

    def close(self) -> None:
        if not self._mark_closed():
            return
        self.cancel()
        self._engine._forget(self)

    def __repr__(self) -> str:
        return f"<RemoteSession {self.id} busy={self._busy} closed={self._closed}>"


def _delta(delta: Any, splitter: ThinkSplitter) -> tuple[str, str]:
    """(reasoning, answer) of one streamed delta. `reasoning_content` is not in the OpenAI SDK's
    types: the SDK keeps such fields in `model_extra`."""
    if delta is None:
        return "", ""
    extra = getattr(delta, "model_extra", None) or {}
    thought = extra.get("reasoning_content") or extra.get("reasoning") or ""
    inline_thought, text = splitter.feed(delta.content or "")
    return (thought if isinstance(thought, str) else "") + inline_thought, text


def _close_quietly(response: Any) -> None:
    try:
        response.close()
    except Exception:
        log.debug("closing a remote stream failed", exc_info=True)


def _transport(error: BaseException) -> bool:
    """A network failure (not an HTTP status answer)."""
    return isinstance(error, (httpx.TransportError, ConnectionError)) or (
        isinstance(error, openai.APIConnectionError) and not isinstance(error, openai.APITimeoutError))


def _check_remote(params: SamplingParams, tools: Optional[list[dict]]) -> None:
    if tools:
        raise InvalidRequestError("a remote engine does not take tools; call the server's API for tool calls")
    if params.constraint is not None and params.constraint.kind != "json_schema":
        raise InvalidRequestError("a remote engine takes only a JSON-schema constraint (as response_format)")
    if params.logprobs is not None:
        raise InvalidRequestError("a remote engine does not return log probabilities")


def request_options(params: SamplingParams) -> dict[str, Any]:
    """The OpenAI request fields for `params`. Fields beyond the OpenAI API (top_k, min_p, ...) go
    only when set away from their neutral value: strict servers refuse names they do not know."""
    options: dict[str, Any] = {"temperature": params.temperature, "max_tokens": params.max_tokens}
    if params.top_p != 1.0:
        options["top_p"] = params.top_p
    if params.seed is not None:
        options["seed"] = params.seed
    for name in ("presence_penalty", "frequency_penalty"):
        if getattr(params, name):
            options[name] = getattr(params, name)
    if params.constraint is not None:
        options["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "response", "strict": True, "schema": params.constraint.schema()}}
    extra: dict[str, Any] = {}
    if params.top_k:
        extra["top_k"] = params.top_k
    if params.min_p:
        extra["min_p"] = params.min_p
    if params.repetition_penalty != 1.0:
        extra["repetition_penalty"] = params.repetition_penalty
    if params.repeat_last_n != SamplingParams.repeat_last_n and (
            params.repetition_penalty != 1.0 or params.presence_penalty or params.frequency_penalty):
        extra["repeat_last_n"] = params.repeat_last_n  # llama.cpp's name (vLLM has no window)
    if params.ignore_stop:
        extra["ignore_eos"] = True
    if extra:
        options["extra_body"] = extra
    return options
