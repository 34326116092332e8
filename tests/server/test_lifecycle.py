"""Small lifecycle defects: SIGTERM shuts down cleanly, any session id can be deleted, ids are never
listed twice, a refused request leaves nothing behind, and CORS headers reach error answers too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx

from tests.server.helpers import KEY, chat_body, http
from tests.server.test_serve_cli import ROOT


def test_sigterm_runs_the_clean_shutdown_and_exits_0(tiny_models):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", "--model", str(tiny_models["llama"]), "--backend", "torch",
         "--dtype", "float32", "--max-context", "256", "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        url = line.split(" at ")[-1].strip()
        assert httpx.post(f"{url}/chat/completions", json=chat_body(max_tokens=2), timeout=120).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
        assert "stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_session_id_with_a_slash_can_be_deleted(serve, tiny_engine):
    h = http(serve(tiny_engine))
    assert h.post("/v1/chat/completions", json=chat_body(session_id="team/alice")).status_code == 200
    assert h.delete("/v1/sessions/team/alice").json()["id"] == "team/alice"
    assert h.get("/v1/sessions").json()["data"] == []


def test_a_client_cannot_name_a_session_like_a_pooled_one(serve, tiny_engine):
    h = http(serve(tiny_engine))
    assert h.post("/v1/chat/completions", json=chat_body()).status_code == 200  # pooled: pool-1
    refused = h.post("/v1/chat/completions", json=chat_body(session_id="pool-1"))
    assert refused.status_code == 400 and "pool-" in refused.json()["error"]["message"]
    ids = [s["id"] for s in h.get("/v1/sessions").json()["data"]]
    assert ids == ["pool-1"]


def test_a_refused_request_leaves_no_empty_pooled_session(serve, tiny_engine):
    h = http(serve(tiny_engine))
    live = tiny_engine.capacity().live_sessions
    refused = h.post("/v1/chat/completions", json=chat_body(seed=-1))
    assert refused.status_code == 400
    assert h.get("/v1/sessions").json()["data"] == []
    assert tiny_engine.capacity().live_sessions == live


def test_with_cors_a_401_carries_the_cors_header(serve, tiny_engine):
    server = serve(tiny_engine, api_key=KEY, cors_origins=("http://example.test",))
    response = http(server).post("/v1/chat/completions", json=chat_body(), headers={"Origin": "http://example.test"})
    assert response.status_code == 401
    assert response.headers["access-control-allow-origin"] == "http://example.test"
