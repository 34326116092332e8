"""OpenAI response objects, whole and streamed (server-sent events ending with `data: [DONE]`)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import AsyncIterator, Optional

from ...reply.toolcalls import ToolCall, parse
from ...reply.toolstream import CallDelta, CallStream, cut_reply
from ..errors import APIError
from ..generation import Piece, Reply, Usage
from ..json_text import json_bytes
from .logprobs import Tokens, chat_logprobs, completion_logprobs


@dataclass
class Result:
    """A whole reply: its content, the tool calls read from it, and what ended it."""

    text: str
    finish_reason: str
    usage: Usage
    calls: list[ToolCall] = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    reasoning: str = ""
    """A thinking model's reasoning, sent apart as `reasoning_content`."""


class Shape:
    """Builds one reply's objects: chat (`chat.completion[.chunk]`) or completions (`text_completion`).

    `tool_format`: the model's call format when calls are to be read from the reply (tools given and
    tool_choice not "none"); `tokens`: set when log probabilities were asked for.
    """

    def __init__(self, kind: str, model: str, session_id: str, tokens: Optional[Tokens] = None,
                 tool_format: Optional[str] = None, parallel: bool = True) -> None:
        self.kind = kind
        self.model = model
        self.session_id = session_id
        self.tokens = tokens
        self.tool_format = tool_format
        self.parallel = parallel
        self._offset = 0
        self.truncated: Optional[dict] = None
        """What was cut to fit the context (engine.reply.truncation.Cut.as_json()); None: nothing."""
        self.id = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex[:24]
        self.created = int(time.time())

    def _head(self, object_name: str) -> dict:
        head = {"id": self.id, "object": object_name, "created": self.created, "model": self.model,
                "system_fingerprint": None, "session_id": self.session_id}
        if self.truncated is not None:  # streamed chunks say it only when something was cut
            head["truncated"] = self.truncated
        return head

    def _logprobs(self, logprobs) -> Optional[dict]:
        if self.tokens is None:
            return None
        if self.kind == "chat":
            return chat_logprobs(self.tokens, logprobs, True)
        out = completion_logprobs(self.tokens, logprobs, True, self._offset)
        self._offset += sum(len(t) for t in out["tokens"])
        return out

    def whole(self, result: Result) -> dict:
        logprobs = self._logprobs(result.logprobs)
        if self.kind == "chat":
            message: dict = {"role": "assistant", "content": result.text, "refusal": None}
            if result.calls:
                message["content"] = result.text or None
                message["tool_calls"] = [call_json(c) for c in result.calls]
            if result.reasoning:  # as llama.cpp's server and DeepSeek's API send it
                message["reasoning_content"] = result.reasoning
            choice = {"index": 0, "message": message, "finish_reason": result.finish_reason, "logprobs": logprobs}
            body = self._head("chat.completion")
        else:
            choice = {"index": 0, "text": result.text, "finish_reason": result.finish_reason, "logprobs": logprobs}
            body = self._head("text_completion")
        return {**body, "choices": [choice], "usage": result.usage.as_json(), "truncated": self.truncated}

    def chunk(self, text: Optional[str], finish_reason: Optional[str] = None, first: bool = False,
              with_usage: bool = False, logprobs: tuple = (), call: Optional[CallDelta] = None,
              reasoning: str = "") -> dict:
        lp = self._logprobs(logprobs) if logprobs else None
        if self.kind == "chat":
            delta: dict = {"role": "assistant", "content": text or ""} if first else (
                {"content": text} if text else {})
            if call is not None:
                delta["tool_calls"] = [delta_json(call)]
            if reasoning:
                delta["reasoning_content"] = reasoning
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": lp}
            body = self._head("chat.completion.chunk")
        else:
            choice = {"index": 0, "text": text or "", "finish_reason": finish_reason, "logprobs": lp}
            body = self._head("text_completion")
        body["choices"] = [choice]
        if with_usage:
            body["usage"] = None  # stream_options.include_usage: null on every chunk but the last
        return body

    def usage_chunk(self, usage: Usage) -> dict:
        body = self._head("chat.completion.chunk" if self.kind == "chat" else "text_completion")
        return {**body, "choices": [], "usage": usage.as_json()}


def sse(obj: dict) -> bytes:
    return b"data: " + json_bytes(obj) + b"\n\n"


DONE = b"data: [DONE]\n\n"


def call_json(call: ToolCall) -> dict:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def delta_json(delta: CallDelta) -> dict:
    """A call's first piece carries its id, type and name; later pieces only more arguments."""
    if delta.id is None:
        return {"index": delta.index, "function": {"arguments": delta.arguments}}
    return {"index": delta.index, "id": delta.id, "type": "function",
            "function": {"name": delta.name, "arguments": delta.arguments}}


class _Calls:
    """Content and tool-call pieces of a reply as it streams (plain text when no tools are in play)."""

    def __init__(self, shape: Shape) -> None:
        self._stream = CallStream(shape.tool_format) if shape.tool_format else None
        self._parallel = shape.parallel
        self.sent = 0

    def feed(self, piece: Piece) -> tuple[str, list[CallDelta]]:
        if self._stream is None:
            return piece.text, []
        text, deltas = self._stream.feed(piece.text)
        if piece.finish_reason is not None:
            rest, more = self._stream.finish(cut=piece.finish_reason == "length")
            text, deltas = text + rest, deltas + more
        if not self._parallel:  # parallel_tool_calls: false keeps the first call only
            deltas = [d for d in deltas if d.index == 0]
        self.sent = max([self.sent] + [d.index + 1 for d in deltas])
        return text, _merged(deltas)

    def reason(self, piece: Piece) -> str:
        return finish_reason(piece.finish_reason, self.sent > 0)


def finish_reason(engine_reason: str, calls: bool) -> str:
    """"length" whenever the token limit cut the reply (a call may be unfinished), else "tool_calls"
    when it holds calls."""
    return "tool_calls" if calls and engine_reason != "length" else engine_reason


def _merged(deltas: list[CallDelta]) -> list[CallDelta]:
    """Consecutive pieces of one call in one chunk."""
    out: list[CallDelta] = []
    for d in deltas:
        if out and out[-1].index == d.index:
            last = out.pop()
            d = CallDelta(d.index, last.arguments + d.arguments, last.id, last.name)
        out.append(d)
    return out


async def collect(reply: Reply, shape: Shape) -> Result:
    """The whole reply (non-streamed requests): its calls are read once it is complete."""
    parts: list[str] = []
    thoughts: list[str] = []
    logprobs: list = []
    async for piece in reply.pieces():
        parts.append(piece.text)
        thoughts.append(piece.reasoning)
        logprobs += piece.logprobs
        if piece.finish_reason is not None:
            text, calls = "".join(parts), []
            if shape.tool_format:  # a cut reply is read as a stream reads it: never a marker as text
                cut = piece.finish_reason == "length"
                text, calls = (cut_reply if cut else parse)(shape.tool_format, text)
                calls = calls if shape.parallel else calls[:1]
            reason = finish_reason(piece.finish_reason, bool(calls))
            return Result(text, reason, piece.usage, calls, logprobs, "".join(thoughts))
    raise APIError(500, "the reply ended without finishing", "generation_failed", "server_error")


async def events(reply: Reply, shape: Shape, include_usage: bool) -> AsyncIterator[bytes]:
    """SSE bytes of a streamed reply. If the client goes away, the generator is closed and
    `reply.close()` (in `pieces`' finally) cancels the reply at the next token."""
    try:
        if shape.kind == "chat":
            yield sse(shape.chunk("", first=True, with_usage=include_usage))
        last: Optional[Piece] = None
        splitter = _Calls(shape)
        async for piece in reply.pieces():
            last = piece
            text, calls = splitter.feed(piece)
            if text or piece.reasoning or (piece.logprobs and shape.tokens is not None):
                yield sse(shape.chunk(text, with_usage=include_usage, logprobs=piece.logprobs,
                                      reasoning=piece.reasoning))
            for call in calls:
                yield sse(shape.chunk(None, with_usage=include_usage, call=call))
            if piece.finish_reason is not None:
                yield sse(shape.chunk(None, splitter.reason(piece), with_usage=include_usage))
        if include_usage and last is not None and last.usage is not None:
            yield sse(shape.usage_chunk(last.usage))
    except APIError as e:  # headers are sent: the error travels as an event, as OpenAI's servers do
        yield sse(e.body())
    finally:
        reply.close()
    yield DONE
