"""OpenAI response objects, whole and streamed (server-sent events ending with `data: [DONE]`)."""

from __future__ import annotations

import json
import time
import uuid
from typing import AsyncIterator, Optional

from .errors import APIError
from .generation import Piece, Reply, Usage


class Shape:
    """Builds one reply's objects: chat (`chat.completion[.chunk]`) or completions (`text_completion`)."""

    def __init__(self, kind: str, model: str, session_id: str) -> None:
        self.kind = kind
        self.model = model
        self.session_id = session_id
        self.id = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex[:24]
        self.created = int(time.time())

    def _head(self, object_name: str) -> dict:
        return {"id": self.id, "object": object_name, "created": self.created, "model": self.model,
                "system_fingerprint": None, "session_id": self.session_id}

    def whole(self, text: str, finish_reason: str, usage: Usage, reasoning: str = "") -> dict:
        if self.kind == "chat":
            message = {"role": "assistant", "content": text}
            if reasoning:  # as llama.cpp's server and DeepSeek's API send it
                message["reasoning_content"] = reasoning
            choice = {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
            body = self._head("chat.completion")
        else:
            choice = {"index": 0, "text": text, "finish_reason": finish_reason, "logprobs": None}
            body = self._head("text_completion")
        return {**body, "choices": [choice], "usage": usage.as_json()}

    def chunk(self, text: Optional[str], finish_reason: Optional[str] = None, first: bool = False,
              with_usage: bool = False, reasoning: str = "") -> dict:
        if self.kind == "chat":
            delta: dict = {"role": "assistant", "content": text or ""} if first else (
                {"content": text} if text else {})
            if reasoning:
                delta["reasoning_content"] = reasoning
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            body = self._head("chat.completion.chunk")
        else:
            choice = {"index": 0, "text": text or "", "finish_reason": finish_reason, "logprobs": None}
            body = self._head("text_completion")
        body["choices"] = [choice]
        if with_usage:
            body["usage"] = None  # stream_options.include_usage: null on every chunk but the last
        return body

    def usage_chunk(self, usage: Usage) -> dict:
        body = self._head("chat.completion.chunk" if self.kind == "chat" else "text_completion")
        return {**body, "choices": [], "usage": usage.as_json()}


def sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


async def collect(reply: Reply) -> tuple[str, str, Usage, str]:
    """The whole reply (non-streamed requests): answer, finish reason, usage, reasoning."""
    parts: list[str] = []
    thoughts: list[str] = []
    async for piece in reply.pieces():
        parts.append(piece.text)
        thoughts.append(piece.reasoning)
        if piece.finish_reason is not None:
            return "".join(parts), piece.finish_reason, piece.usage, "".join(thoughts)
    raise APIError(500, "the reply ended without finishing", "generation_failed", "server_error")


async def events(reply: Reply, shape: Shape, include_usage: bool) -> AsyncIterator[bytes]:
    """SSE bytes of a streamed reply. If the client goes away, the generator is closed and
    `reply.close()` (in `pieces`' finally) cancels the reply at the next token."""
    try:
        if shape.kind == "chat":
            yield sse(shape.chunk("", first=True, with_usage=include_usage))
        last: Optional[Piece] = None
        async for piece in reply.pieces():
            last = piece
            if piece.text or piece.reasoning:
                yield sse(shape.chunk(piece.text, with_usage=include_usage, reasoning=piece.reasoning))
            if piece.finish_reason is not None:
                yield sse(shape.chunk(None, piece.finish_reason, with_usage=include_usage))
        if include_usage and last is not None and last.usage is not None:
            yield sse(shape.usage_chunk(last.usage))
    except APIError as e:  # headers are sent: the error travels as an event, as OpenAI's servers do
        yield sse(e.body())
    finally:
        reply.close()
    yield DONE
