"""Loopback servers that are not what the dialog hopes for: a web page, a 404 service, a socket
that never answers. Each runs on 127.0.0.1 on a free port and is stopped by the test."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator
from contextlib import contextmanager


def _handler(status: int, body: bytes, content_type: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    return Handler


@contextmanager
def http_stub(status: int = 200, body: bytes = b"<html><body>Router login</body></html>",
              content_type: str = "text/html") -> Iterator[str]:
    """A plain HTTP server answering every GET the same; yields its base URL (…/v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(status, body, content_type))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@contextmanager
def silent_socket() -> Iterator[str]:
    """A port that accepts connections and never answers (a hung server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


class _DroppingHandler(BaseHTTPRequestHandler):
    """An OpenAI-shaped server that lists one model and, asked for a streamed reply, sends one
    piece of it and closes the connection mid-body (a server killed mid-reply)."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b'{"object": "list", "data": [{"id": "stub", "object": "model"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        event = (b'data: {"id": "1", "object": "chat.completion.chunk", "created": 0, "model": "stub", '
                 b'"choices": [{"index": 0, "delta": {"content": "Once upon"}, "finish_reason": null}]}\n\n')
        self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.flush()
        self.close_connection = True  # no closing 0-chunk: the body ends short

    def log_message(self, *args) -> None:
        pass


@contextmanager
def dropping_server() -> Iterator[str]:
    """A server that dies mid-reply (see `_DroppingHandler`); yields its base URL (…/v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DroppingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
