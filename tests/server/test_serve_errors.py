"""Every refusal, by status and OpenAI-style body: {"error": {"message", "type", "code"}}."""

from __future__ import annotations

import threading

import openai
import pytest

from engine.server import EngineHost
from tests.server.helpers import KEY, chat_body, client, http


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and error["type"]
    return error


@pytest.mark.parametrize("body, words", [
    ({"messages": [{"role": "wizard", "content": "hi"}]}, "role"),
    ({"messages": [{"role": "user", "content": 5}]}, "content"),
    ({"messages": []}, "messages"),
    ({"messages": "hello"}, "messages"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, "n=1"),
    ({"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}, "temperature"),
    ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}, "tools"),
    ({"messages": [{"role": "user", "content": "hi"}], "logit_bias": {"1": 5}}, "logit_bias"),
    ({"messages": [{"role": "user", "content": "hi"}], "frequency_penalty": 3.0}, "frequency_penalty"),
    ({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "x"}}]}]}, "content"),
])
def test_malformed_chat_bodies_are_400(serve, tiny_engine, body, words):
    error = _error(http(serve(tiny_engine)).post("/v1/chat/completions", json=body), 400, "invalid_request")
    assert words in error["message"]
    assert error["type"] == "invalid_request_error"


def test_not_json_is_400(serve, tiny_engine):
    response = http(serve(tiny_engine)).post("/v1/chat/completions", content=b"{not json",
                                              headers={"content-type": "application/json"})
    _error(response, 400, "invalid_request")


def test_prompt_past_the_context_is_400_context_length_exceeded(serve, tiny_engine):
    long = " ".join(["word"] * 400)  # the tiny engine's max_context is 256
    server = serve(tiny_engine)
    error = _error(http(server).post("/v1/chat/completions", json=chat_body(long)), 400, "context_length_exceeded")
    assert "256" in error["message"]
    with pytest.raises(openai.BadRequestError) as caught:
        client(server).completions.create(model=tiny_engine.source, prompt=long, max_tokens=2)
    assert caught.value.code == "context_length_exceeded"


def test_api_key_missing_or_wrong_is_401(serve, tiny_engine):
    server = serve(tiny_engine, api_key=KEY)
    h = http(server)
    _error(h.get("/v1/models"), 401, "invalid_api_key")
    _error(h.get("/v1/models", headers={"Authorization": "Bearer wrong"}), 401, "invalid_api_key")
    with pytest.raises(openai.AuthenticationError):
        client(server, api_key="wrong").models.list()
    assert [m.id for m in client(server, api_key=KEY).models.list()] == [tiny_engine.source]
    assert h.get("/health").status_code == 200  # liveness needs no key


def test_unknown_model_and_session_are_404(serve, tiny_engine):
    h = http(serve(tiny_engine))
    error = _error(h.post("/v1/chat/completions", json=chat_body(model="gpt-4o")), 404, "model_not_found")
    assert "gpt-4o" in error["message"]
    _error(h.delete("/v1/sessions/nobody"), 404, "session_not_found")


def _hold_a_reply(server, session_id: str) -> tuple[threading.Event, list]:
    """Start a long streamed reply on `session_id` and return once its first token arrived."""
    started, seen = threading.Event(), []

    def run():
        body = chat_body(max_tokens=200, stream=True, session_id=session_id)
        with http(server).stream("POST", "/v1/chat/completions", json=body) as response:
            for line in response.iter_lines():
                seen.append(line)
                if line.startswith("data: ") and '"content"' in line and len(seen) > 2:
                    started.set()
        started.set()

    threading.Thread(target=run, daemon=True).start()
    assert started.wait(120)
    return started, seen


def test_named_session_already_generating_is_409(serve, tiny_engine):
    server = serve(tiny_engine)
    _hold_a_reply(server, "dora")
    h = http(server)
    _error(h.post("/v1/chat/completions", json=chat_body(session_id="dora")), 409, "session_busy")
    assert h.delete("/v1/sessions/dora").status_code == 200  # frees it, cancelling the reply


def test_capacity_full_is_429_with_retry_after(serve, tiny_models):
    from engine import Engine, EngineConfig

    with Engine.load(str(tiny_models["llama"]), EngineConfig(backend="torch", dtype="float32", max_context=256,
                                                             max_sessions=1)) as engine:
        server = serve(engine)
        _hold_a_reply(server, "only")
        response = http(server).post("/v1/chat/completions", json=chat_body(session_id="another"))
        error = _error(response, 429, "capacity_exceeded")
        # the held reply's tokens left at its measured speed, the same figure in words
        seconds = int(response.headers["Retry-After"])
        assert 1 <= seconds <= 600 and "1 of 1" in error["message"]
        assert f"about {seconds} s" in error["message"], error["message"]
        server.stop()
        server.host.close()


def test_no_model_loaded_is_503(serve):
    server = serve(None)
    h = http(server)
    _error(h.get("/v1/models"), 503, "model_not_loaded")
    _error(h.post("/v1/chat/completions", json=chat_body()), 503, "model_not_loaded")
    assert h.get("/health").status_code == 503


def test_model_switch_reaches_the_server(serve, tiny_engine):
    server = serve(tiny_engine)
    h = http(server)
    assert h.post("/v1/chat/completions", json=chat_body(session_id="s")).status_code == 200
    freeing = server.host.set_engine(None, "loading another model")
    error = _error(h.post("/v1/chat/completions", json=chat_body()), 503, "model_not_loaded")
    assert "loading another model" in error["message"]
    freeing.join(30)
    server.host.set_engine(tiny_engine)
    assert h.get("/v1/sessions").json()["data"] == []  # the old pool's sessions were freed
    assert h.post("/v1/chat/completions", json=chat_body()).status_code == 200


def test_no_cors_unless_asked(serve, tiny_engine):
    preflight = {"Origin": "http://example.test", "Access-Control-Request-Method": "POST"}
    closed = http(serve(tiny_engine)).options("/v1/chat/completions", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers
    opened = http(serve(tiny_engine, cors_origins=("http://example.test",))).options(
        "/v1/chat/completions", headers=preflight)
    assert opened.headers["access-control-allow-origin"] == "http://example.test"
