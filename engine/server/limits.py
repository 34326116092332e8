"""Bounds on one request's work: the body's size, and a prompt's length before it is tokenized.

A body is refused by its Content-Length before it is read, or, when sent without one (chunked),
as soon as what arrived passes the bound. A prompt longer in characters than the context could
hold even if every token were the vocabulary's longest is refused without tokenizing it: a 10 MB
prompt would otherwise cost seconds and a gigabyte to learn it does not fit.
"""

from __future__ import annotations

import weakref

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import Engine
from .errors import APIError

DEFAULT_MAX_BODY = 8 * 1024 * 1024


def too_large(limit: int) -> APIError:
    return APIError(413, f"the request body is larger than this server accepts ({limit / 1e6:.1f} MB)",
                    "request_too_large")


class BodyLimit:
    """ASGI middleware: 413 for a body over `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or ()).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            return await too_large(self.max_bytes).response()(scope, receive, send)
        received = 0

        async def bounded() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:  # the app's error handler answers it (see errors.py)
                    raise HTTPException(413, too_large(self.max_bytes).message)
            return message

        await self.app(scope, bounded, send)


_longest: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()


def longest_token_chars(engine: Engine) -> int:
    """Most characters one token of this vocabulary stands for (its longest entry bounds it)."""
    tokenizer = engine.tokenizer
    n = _longest.get(tokenizer)
    if n is None:
        n = _longest[tokenizer] = max((len(t) for t in tokenizer.get_vocab()), default=1) or 1
    return n


def check_chars(engine: Engine, chars: int) -> None:
    """400 context_length_exceeded for text that cannot fit the context whatever its tokens."""
    limit = engine.config.max_context
    if chars > limit * longest_token_chars(engine):
        raise APIError(400, f"the prompt has {chars} characters, more than this model's context of {limit} "
                            "tokens can hold", "context_length_exceeded")
