"""A reply cut short never looks finished: deleting its session or stopping the server ends it with
an error (an error event in a stream, a 5xx otherwise), and a client that hangs up on a non-streamed
request stops its reply and frees its session."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from engine import RemoteEngine, SamplingParams
from engine.errors import ReplyInterruptedError
from tests.server.helpers import chat_body, http

LONG = dict(max_tokens=400, ignore_eos=True)


def _stream_until_first_token(server, session_id: str):
    """Open a long streamed reply; return (events so far, the rest of the lines, closer) once a token came."""
    client = http(server)
    response = client.stream("POST", "/v1/chat/completions", json=chat_body(stream=True, session_id=session_id, **LONG))
    opened = response.__enter__()
    lines = opened.iter_lines()
    for line in lines:
        if '"content":"' in line and '"role"' not in line:
            break
    return lines, lambda: response.__exit__(None, None, None)


def _events(lines) -> list:
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def _wait_idle(h, session_id: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [s for s in h.get("/v1/sessions").json()["data"] if s["id"] == session_id]
        if found and not found[0]["busy"]:
            return found[0]
        if not found:
            return {}
        time.sleep(0.05)
    raise AssertionError(f"session {session_id} stayed busy")


def test_deleting_a_session_mid_stream_ends_with_an_error_event_not_stop(serve, bundled_engine):
    server = serve(bundled_engine)
    lines, close = _stream_until_first_token(server, "cut")
    try:
        assert http(server).delete("/v1/sessions/cut").status_code == 200
        events = _events(lines)
    finally:
        close()
    reasons = [c["finish_reason"] for e in events for c in e.get("choices", []) if c.get("finish_reason")]
    assert reasons == []  # neither "stop" nor "length": the reply did not finish
    assert events[-1]["error"]["code"] == "reply_interrupted" and "deleted" in events[-1]["error"]["message"]


def test_deleting_a_session_mid_reply_answers_5xx_to_a_non_streamed_request(serve, bundled_engine):
    server = serve(bundled_engine)
    h = http(server)
    answer: list = []
    thread = threading.Thread(target=lambda: answer.append(
        h.post("/v1/chat/completions", json=chat_body(session_id="cut2", **LONG))))
    thread.start()
    deadline = time.monotonic() + 60
    while not any(s["id"] == "cut2" and s["tokens"] > 40 for s in http(server).get("/v1/sessions").json()["data"]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert http(server).delete("/v1/sessions/cut2").status_code == 200
    thread.join(60)
    assert answer[0].status_code >= 500, answer[0].text
    assert answer[0].json()["error"]["code"] == "reply_interrupted"


def test_server_stopping_mid_stream_is_an_error_event(serve, bundled_engine):
    server = serve(bundled_engine)
    lines, close = _stream_until_first_token(server, "shut")
    try:
        server.host.cancel_all()  # what a SIGTERM or Ctrl+C does first
        events = _events(lines)
    finally:
        close()
    assert not [c for e in events for c in e.get("choices", []) if c.get("finish_reason")]
    assert events[-1]["error"]["code"] == "reply_interrupted" and "stopping" in events[-1]["error"]["message"]


def test_remote_engine_marks_a_cut_reply_interrupted(serve, bundled_engine):
    server = serve(bundled_engine)
    remote = RemoteEngine.connect(server.url, max_sessions=2)
    try:
        with remote.open_session() as session:
            stream = session.chat([{"role": "user", "content": "Tell a long story."}],
                                  SamplingParams(temperature=0, max_tokens=400, ignore_stop=True))
            chunks = iter(stream)
            next(chunks)
            server.host.cancel_all()
            with pytest.raises(ReplyInterruptedError, match="interrupted"):
                list(chunks)
    finally:
        remote.close()


def test_a_non_streamed_client_that_hangs_up_stops_its_reply(serve, bundled_engine):
    server = serve(bundled_engine)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server.url}/chat/completions", json=chat_body(session_id="gone", **LONG), timeout=2.0)
    h = http(server)
    gone = _wait_idle(h, "gone")
    assert gone["tokens"] < 300  # stopped well before its 400 tokens
    retry = h.post("/v1/chat/completions", json=chat_body(session_id="gone", max_tokens=2))
    assert retry.status_code == 200  # the session is free for the client's retry (no 409)
