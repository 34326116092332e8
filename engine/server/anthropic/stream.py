"""Anthropic Messages replies, whole and streamed, built from the chat path's reply pieces.

Streamed, the event sequence is Anthropic's: `message_start`, `ping`, per content block
`content_block_start` / `content_block_delta` (`thinking_delta`, `text_delta`, `input_json_delta`) /
`content_block_stop`, then `message_delta` (stop_reason, usage) and `message_stop`; an error after the
headers went out is an `error` event. While a long prefill keeps the first token away, a `ping` goes
out every `PING_S` seconds so clients and proxies do not take the quiet for a dead connection.
"""

from __future__ import annotations

import json
import uuid
from typing import AsyncIterator, Optional

from ...reply.toolstream import CallDelta
from ..chat.replies import Result, Shape, _Calls
from ..errors import APIError
from ..generation import Piece, Reply, Usage
from ..json_text import json_bytes
from ..keep_alive import keep_alive
from .errors import body_of

PING_S = 5.0
TOOL_ID_PREFIX = "toolu_"


def message_id() -> str:
    return "msg_" + uuid.uuid4().hex[:24]


def usage_json(usage: Usage) -> dict:
    """Anthropic counts the prompt tokens read from a warm session apart from the computed ones."""
    return {"input_tokens": usage.prompt_tokens - usage.cached_tokens, "output_tokens": usage.completion_tokens,
            "cache_read_input_tokens": usage.cached_tokens, "cache_creation_input_tokens": 0}


def stop_reason(finish_reason: str, calls: bool, stop_sequence: Optional[str]) -> str:
    if finish_reason == "length":
        return "max_tokens"
    if calls:
        return "tool_use"
    return "stop_sequence" if stop_sequence is not None else "end_turn"


def whole(result: Result, reply: Reply, msg_id: str, model: str) -> dict:
    """The `message` object of a non-streamed reply."""
    content: list[dict] = []
    if result.reasoning:
        content.append({"type": "thinking", "thinking": result.reasoning, "signature": ""})
    if result.text.strip():
        content.append({"type": "text", "text": result.text})
    for call in result.calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:  # a call the token limit cut: stop_reason max_tokens says so
            continue
        content.append({"type": "tool_use", "id": TOOL_ID_PREFIX + call.id, "name": call.name, "input": arguments})
    stop = None if result.calls else reply.stop_sequence
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop_reason(result.finish_reason, bool(result.calls), stop),
            "stop_sequence": stop, "usage": usage_json(result.usage)}


def event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: ".encode() + json_bytes(data) + b"\n\n"


def error_event(error: APIError) -> bytes:
    return event("error", body_of(error.status, error.body()))  # the same mapping as whole error answers


class _Blocks:
    """The open content block and the next index: a new kind of content closes the one before."""

    def __init__(self) -> None:
        self.index = -1
        self.open: Optional[str] = None
        self._space = ""  # whitespace before any text: sent only if text follows

    def _start(self, kind: str, block: dict) -> list[bytes]:
        out = self.close()
        self.index += 1
        self.open = kind
        return out + [event("content_block_start", {"type": "content_block_start", "index": self.index,
                                                    "content_block": block})]

    def _delta(self, delta: dict) -> bytes:
        return event("content_block_delta", {"type": "content_block_delta", "index": self.index, "delta": delta})

    def thinking(self, text: str) -> list[bytes]:
        out = [] if self.open == "thinking" else self._start("thinking", {"type": "thinking", "thinking": "",
                                                                          "signature": ""})
        return out + [self._delta({"type": "thinking_delta", "thinking": text})]

    def text(self, text: str) -> list[bytes]:
        if self.open != "text":
            if not (self._space + text).strip():
                self._space += text
                return []
            text, self._space = self._space + text, ""
            out = self._start("text", {"type": "text", "text": ""})
        else:
            out = []
        return out + [self._delta({"type": "text_delta", "text": text})]

    def call(self, delta: CallDelta) -> list[bytes]:
        out = []
        if delta.id is not None:
            out = self._start("tool_use", {"type": "tool_use", "id": TOOL_ID_PREFIX + delta.id,
                                           "name": delta.name, "input": {}})
        if delta.arguments:
            out.append(self._delta({"type": "input_json_delta", "partial_json": delta.arguments}))
        return out

    def close(self) -> list[bytes]:
        if self.open is None:
            return []
        self.open = None
        return [event("content_block_stop", {"type": "content_block_stop", "index": self.index})]


def events(reply: Reply, shape: Shape, msg_id: str, model: str, prompt_len: int,
           extra: Optional[dict] = None) -> AsyncIterator[bytes]:
    """SSE bytes of a streamed reply, with a `ping` every PING_S seconds while nothing else goes out
    (keep_alive). A client that goes away closes the generator, and the reply is cancelled at the
    next token (`reply.close()`). `extra`: fields for the message_start's message (what the context
    policy cut: `truncated`)."""
    ping = event("ping", {"type": "ping"})
    return keep_alive(_events(reply, shape, msg_id, model, prompt_len, extra), PING_S, ping)


async def _events(reply: Reply, shape: Shape, msg_id: str, model: str, prompt_len: int,
                  extra: Optional[dict]) -> AsyncIterator[bytes]:
    try:
        yield event("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": prompt_len, "output_tokens": 0}, **(extra or {})}})
        yield event("ping", {"type": "ping"})
        blocks, splitter = _Blocks(), _Calls(shape)
        last: Optional[Piece] = None
        async for last in reply.pieces():
            out = blocks.thinking(last.reasoning) if last.reasoning else []
            text, calls = splitter.feed(last)
            if text:
                out += blocks.text(text)
            for call in calls:
                out += blocks.call(call)
            for chunk in out:
                yield chunk
        for chunk in blocks.close():
            yield chunk
        if last is None or last.usage is None:
            raise APIError(500, "the reply ended without finishing", "generation_failed", "server_error")
        calls = splitter.sent > 0
        stop = None if calls else reply.stop_sequence
        usage = usage_json(last.usage)
        yield event("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": stop_reason(last.finish_reason, calls, stop), "stop_sequence": stop}, "usage": usage})
        yield event("message_stop", {"type": "message_stop"})
    except APIError as e:  # headers are sent: the error travels as an event, as Anthropic's API does
        yield error_event(e)
    finally:
        reply.close()
