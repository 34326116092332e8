"""The server says whether replies are sped up by drafted tokens, and which draft model guesses:
`/v1/models` carries Confab's `drafting` object, and `serve --draft-model` loads one."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from engine import Engine, EngineConfig
from tests.server.helpers import client, http

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

BUNDLED = "bundled:smollm2-135m-instruct"


@pytest.fixture(scope="module")
def drafting_engine():
    engine = Engine.load(BUNDLED, EngineConfig(backend="llamacpp", max_context=512, max_sessions=2,
                                               draft_model=BUNDLED))
    yield engine
    engine.close()


def test_models_name_the_draft_model_and_replies_use_it(serve, drafting_engine):
    server = serve(drafting_engine)
    listed = http(server).get("/v1/models").json()["data"][0]
    assert listed["drafting"]["enabled"] is True
    assert listed["drafting"]["draft_model"].startswith(BUNDLED)
    assert http(server).get(f"/v1/models/{BUNDLED}").json()["drafting"] == listed["drafting"]
    reply = client(server).chat.completions.create(
        model=BUNDLED, messages=[{"role": "user", "content": "Tell me a story about a cat."}],
        temperature=0, max_tokens=24, extra_body={"speculative": False})
    again = client(server).chat.completions.create(
        model=BUNDLED, messages=[{"role": "user", "content": "Tell me a story about a cat."}],
        temperature=0, max_tokens=24)
    assert again.choices[0].message.content == reply.choices[0].message.content


def test_models_say_drafting_is_off_where_the_backend_does_not_draft(serve, tiny_engine):
    listed = http(serve(tiny_engine)).get("/v1/models").json()["data"][0]
    assert listed["drafting"] == {"enabled": False, "draft_model": None}


def test_models_say_where_the_model_runs(serve, drafting_engine):
    listed = http(serve(drafting_engine)).get("/v1/models").json()["data"][0]
    runs_on = listed["runs_on"]
    assert runs_on["backend"] == "llamacpp" and runs_on["device"] == drafting_engine.device
    assert runs_on["placement"] == (drafting_engine.placement or None)  # "RTX 4070 · 31/31 layers" on a GPU


def test_serve_with_a_draft_model_says_so_when_it_starts():
    command = [sys.executable, "-m", "engine", "serve", "--port", "0", "--backend", "llamacpp",
               "--max-context", "512", "--max-sessions", "2", "--draft-model", BUNDLED]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = [server.stdout.readline(), server.stdout.readline()]
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert lines[0].startswith(f"serving {BUNDLED}") and "127.0.0.1" in lines[0]
    assert lines[1].startswith(f"drafting with {BUNDLED}")
