"""Who may see what: the keyless loopback server answers only loopback Host names (DNS rebinding),
and with several API keys each key's sessions are its own (listing, deleting, prefix matching)."""

from __future__ import annotations

import pytest

from tests.server.helpers import chat_body, http

KEYS = ("key-one", "key-two")
STORY = "Once upon a time there was a lighthouse keeper who counted the ships every night"


def _as(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8317", "192.168.1.5", "localhost.evil.test"])
def test_keyless_server_refuses_a_foreign_host_header(serve, tiny_engine, host):
    h = http(serve(tiny_engine))
    response = h.get("/v1/models", headers={"Host": host})
    assert response.status_code == 403 and response.json()["error"]["code"] == "invalid_host"
    assert h.post("/v1/chat/completions", json=chat_body(), headers={"Host": host}).status_code == 403


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]"])
def test_keyless_server_answers_loopback_host_names(serve, tiny_engine, host):
    server = serve(tiny_engine)
    response = http(server).get("/v1/models", headers={"Host": f"{host}:{server.port}"})
    assert response.status_code == 200


def test_each_key_sees_and_deletes_only_its_own_sessions(serve, tiny_engine):
    h = http(serve(tiny_engine, api_key=KEYS[0], api_keys=KEYS[1:]))
    assert h.post("/v1/chat/completions", json=chat_body(session_id="mine"), headers=_as(KEYS[0])).status_code == 200
    assert h.post("/v1/chat/completions", json=chat_body(), headers=_as(KEYS[0])).status_code == 200
    assert h.get("/v1/sessions", headers=_as(KEYS[1])).json()["data"] == []
    assert h.delete("/v1/sessions/mine", headers=_as(KEYS[1])).status_code == 404
    assert h.delete("/v1/sessions/pool-1", headers=_as(KEYS[1])).status_code == 404
    assert sorted(s["id"] for s in h.get("/v1/sessions", headers=_as(KEYS[0])).json()["data"]) == ["mine", "pool-1"]
    # the same name under another key is another session
    other = h.post("/v1/chat/completions", json=chat_body(session_id="mine"), headers=_as(KEYS[1])).json()
    assert other["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert h.delete("/v1/sessions/mine", headers=_as(KEYS[0])).status_code == 200


def test_prefix_matching_never_crosses_keys(serve, tiny_engine):
    h = http(serve(tiny_engine, api_key=KEYS[0], api_keys=KEYS[1:]))
    first = h.post("/v1/chat/completions", json=chat_body(STORY), headers=_as(KEYS[0])).json()
    again = h.post("/v1/chat/completions", json=chat_body(STORY), headers=_as(KEYS[0])).json()
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] >= first["usage"]["prompt_tokens"] - 1
    guess = h.post("/v1/chat/completions", json=chat_body(STORY), headers=_as(KEYS[1])).json()
    assert guess["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_prefix_matching_never_crosses_named_sessions(serve, tiny_engine):
    h = http(serve(tiny_engine))
    assert h.post("/v1/chat/completions", json=chat_body(STORY, session_id="alice")).status_code == 200
    guess = h.post("/v1/chat/completions", json=chat_body(STORY, session_id="mallory")).json()
    assert guess["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    unnamed = h.post("/v1/chat/completions", json=chat_body(STORY)).json()
    assert unnamed["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_an_over_long_session_id_header_is_400(serve, tiny_engine):
    h = http(serve(tiny_engine))
    response = h.post("/v1/chat/completions", json=chat_body(), headers={"X-Session-Id": "x" * 70_000})
    assert response.status_code == 400 and "200" in response.json()["error"]["message"]
    assert h.get("/v1/sessions").json()["data"] == []


@pytest.mark.parametrize("keys", [(), KEYS])
def test_the_guard_adds_no_task_per_streamed_chunk(keys):
    # Starlette's BaseHTTPMiddleware (`@app.middleware("http")`) passes every chunk of a streamed
    # reply through a task and a memory stream: on two cores shared with the compute threads, the
    # server's own Python is what separates it from llama-server at eight clients.
    from starlette.middleware.base import BaseHTTPMiddleware

    from engine.server.app import ServerSettings, create_app
    from engine.server.host import EngineHost

    app = create_app(EngineHost(), ServerSettings(api_keys=keys, cors_origins=("http://localhost:3000",)))
    assert app.user_middleware and not [m for m in app.user_middleware if issubclass(m.cls, BaseHTTPMiddleware)]
