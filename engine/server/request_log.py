"""The server's recent requests, for the app's Server view (LM Studio's Developer tab): method, path,
client, status, tokens, time, and the error behind each 4xx/5xx, as each request ends.

    log = RequestLog()
    app = create_app(host, ServerSettings(request_log=log))
    log.listen(lambda entry: ...)   # called on the server's thread as each request ends
    log.entries()                   # the last MAX_ENTRIES, oldest first

A pure ASGI middleware, not Starlette's BaseHTTPMiddleware: a streamed reply's body passes through
untouched, chunk by chunk, and the entry is written when its last chunk has been sent (or the client
went away). Tokens are read from the `usage` the reply itself reports (OpenAI's prompt/completion
tokens, Anthropic's and Responses' input/output tokens), in the JSON body or in the stream's event
that carries it; the error is the message of the body's error object.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional

MAX_ENTRIES = 500
"""Requests kept: the log is for watching what clients do now, not an archive."""
_PEEK = 64 * 1024
"""Bytes of a whole (non-streamed) JSON body kept to read its usage or error; larger bodies are
read only for their status."""


@dataclass
class RequestEntry:
    """One request, as the Server view shows it."""

    started: float
    """Wall-clock time it arrived (time.time())."""
    method: str
    path: str
    client: str
    """The caller's address and port ("127.0.0.1:53122")."""
    status: int = 0
    """0 while it runs; 499 when the client went away before the answer ended."""
    seconds: float = 0.0
    """From arrival to the last byte sent."""
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    error: str = ""
    """The reason given with a 4xx/5xx ("" otherwise)."""
    streamed: bool = False
    _body: bytearray = field(default_factory=bytearray, repr=False)


class RequestLog:
    """A bounded, thread-safe list of recent requests, with listeners told of each as it ends."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: deque[RequestEntry] = deque(maxlen=max_entries)
        self._listeners: list[Callable[[RequestEntry], None]] = []
        self._lock = threading.Lock()

    def listen(self, listener: Callable[[RequestEntry], None]) -> None:
        """Call `listener(entry)` as each request ends (on the server's thread: post to your own)."""
        with self._lock:
            self._listeners.append(listener)

    def entries(self) -> list[RequestEntry]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _ended(self, entry: RequestEntry) -> None:
        entry._body = bytearray()
        with self._lock:
            self._entries.append(entry)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(entry)
            except Exception:  # a view's failure must never fail a request
                pass

    def middleware(self, app):
        """The ASGI middleware that records every HTTP request into this log."""
        log = self

        async def logged(scope, receive, send):
            if scope["type"] != "http":
                return await app(scope, receive, send)
            client = scope.get("client") or ("", 0)
            entry = RequestEntry(time.time(), scope.get("method", ""), scope.get("path", ""),
                                 f"{client[0]}:{client[1]}" if client[0] else "")
            began = time.perf_counter()
            logged = False

            def end() -> None:
                nonlocal logged
                logged = True
                _finish(entry)
                entry.seconds = time.perf_counter() - began
                log._ended(entry)

            async def watch(message):
                if message["type"] == "http.response.start":
                    entry.status = message["status"]
                    headers = dict(message.get("headers") or [])
                    entry.streamed = headers.get(b"content-type", b"").startswith(b"text/event-stream")
                elif message["type"] == "http.response.body":
                    _read(entry, message.get("body", b""))
                    if not message.get("more_body", False):
                        end()  # before the last bytes leave: a client that has its answer finds it logged
                await send(message)

            try:
                await app(scope, receive, watch)
            except BaseException:
                entry.status = entry.status or 500
                raise
            finally:
                if not logged:  # the client went away, or the app failed before answering whole
                    entry.status = entry.status if entry.status >= 400 else 499
                    end()

        return logged


def _read(entry: RequestEntry, chunk: bytes) -> None:
    """Keep what the usage or the error will be read from: a whole body's first bytes, or a stream's
    events that mention usage or an error."""
    if not chunk:
        return
    if not entry.streamed:
        if len(entry._body) < _PEEK:
            entry._body += chunk[:_PEEK - len(entry._body)]
        return
    if b'"usage"' in chunk or b'"error"' in chunk:
        for line in chunk.split(b"\n"):
            if line.startswith(b"data:") and (b'"usage"' in line or b'"error"' in line):
                _take(entry, line[5:].strip())


def _finish(entry: RequestEntry) -> None:
    if entry._body:
        _take(entry, bytes(entry._body))


def _take(entry: RequestEntry, data: bytes) -> None:
    try:
        body = json.loads(data)
    except ValueError:
        return
    if not isinstance(body, dict):
        return
    usage = _find(body, "usage")
    if isinstance(usage, dict):
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        if isinstance(prompt, int):
            entry.prompt_tokens = prompt
        if isinstance(completion, int):
            entry.completion_tokens = completion
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        entry.error = error["message"]
    elif isinstance(body.get("detail"), str) and entry.status >= 400:
        entry.error = body["detail"]


def _find(body: dict, key: str):
    """`key` at the top, or one level down (Responses' `response.usage`, Anthropic's
    `message.usage` in message_start)."""
    if key in body:
        return body[key]
    for value in body.values():
        if isinstance(value, dict) and key in value:
            return value[key]
    return None
