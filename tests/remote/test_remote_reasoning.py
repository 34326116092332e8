"""The remote engine reads reasoning back apart: from `reasoning_content` (Confab's server, as
llama.cpp's and DeepSeek's send it), or split from `<think>` tags left inline in the content by a
server that does not split them, wherever the stream cuts the tags."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from engine import Engine, EngineConfig, RemoteEngine, SamplingParams
from engine.server import BackgroundServer, EngineHost, ServerSettings
from tests.engine.helpers import with_template

ASK = [{"role": "user", "content": "What is 2+2?"}]
INLINE = "<think>\nTwo and two.\n</think>\n\nFour."


@pytest.fixture(scope="module")
def thinking_server(tiny_models, tmp_path_factory):
    folder = with_template(tiny_models["llama"], tmp_path_factory.mktemp("r1") / "tiny", "deepseek-r1-distill")
    engine = Engine.load(str(folder), EngineConfig(backend="torch", dtype="float32", max_context=256))
    server = BackgroundServer(EngineHost(engine), ServerSettings(), port=0).start()
    yield engine, server
    server.stop()
    server.host.close()


def test_reasoning_content_comes_back_apart(thinking_server):
    engine, server = thinking_server
    params = SamplingParams(temperature=0, max_tokens=10)
    with engine.open_session() as local:
        here = local.chat(ASK, params).reply()
    remote = RemoteEngine.connect(server.url)
    try:
        assert not remote.thinking_switch
        with remote.open_session() as session:
            history = ASK + [{"role": "assistant", "content": "4", "reasoning": "adding"}, ASK[0]]
            session.chat(history, params).reply()  # earlier reasoning is not sent: the server accepts it
            there = session.chat(ASK, params).reply()
    finally:
        remote.close()
    assert there.reasoning == here.reasoning and there.reasoning
    assert there.text == here.text == ""


@contextmanager
def inline_server(deltas: list[list]) -> Iterator[str]:
    """An OpenAI-style server that streams each request's reply as the next list of deltas: text
    is content, left with <think> inline (as a server without a reasoning parser does); a dict is
    sent as the delta itself."""
    pending = list(deltas)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self._send(b"application/json", json.dumps({"object": "list", "data": [{"id": "m"}]}).encode())

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            events = [{"choices": [{"index": 0, "finish_reason": None,
                                    "delta": piece if isinstance(piece, dict) else {"content": piece}}]}
                      for piece in pending.pop(0)]
            events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
            self._send(b"text/event-stream", body)

        def _send(self, kind: bytes, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind.decode())
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_inline_think_tags_split_at_every_cut():
    cuts = [[INLINE[:i], INLINE[i:]] for i in range(len(INLINE) + 1)] + [list(INLINE)]
    with inline_server(cuts) as url:
        remote = RemoteEngine.connect(url)
        try:
            with remote.open_session() as session:
                for cut in cuts:
                    reply = session.chat(ASK, SamplingParams(temperature=0)).reply()
                    assert (reply.reasoning, reply.text) == ("Two and two.", "Four."), cut
        finally:
            remote.close()


def test_vllm_and_ollamas_reasoning_field_is_read_too():
    deltas = [[{"role": "assistant", "content": ""}, {"reasoning": "Two and "}, {"reasoning": "two."},
               {"content": "Four."}]]
    with inline_server(deltas) as url:
        remote = RemoteEngine.connect(url)
        try:
            with remote.open_session() as session:
                reply = session.chat(ASK, SamplingParams(temperature=0)).reply()
        finally:
            remote.close()
    assert (reply.reasoning, reply.text) == ("Two and two.", "Four.")
