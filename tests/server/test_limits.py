"""Bounded work per request: an over-large body is refused before it is read whole, a prompt that
cannot fit the context is refused before it is tokenized whole, and text the JSON allowed but
UTF-8 cannot hold (a lone surrogate) is handled instead of failing with a 500."""

from __future__ import annotations

import json

import pytest

from tests.server.helpers import chat_body, http


def _post_raw(h, path: str, body: dict):
    return h.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


def test_a_body_over_the_limit_is_413(serve, tiny_engine):
    h = http(serve(tiny_engine))
    huge = chat_body("word " * 2_000_000)  # 10 MB
    response = h.post("/v1/chat/completions", json=huge)
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"
    assert "MB" in response.json()["error"]["message"]


def test_a_streamed_body_without_length_is_bounded_too(serve, tiny_engine):
    h = http(serve(tiny_engine, max_body_bytes=100_000))
    def chunks():
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(200):
            yield b"x" * 1000
        yield b'"}]}'
    response = h.post("/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", chat_body("word " * 400_000)),
    ("/v1/completions", {"prompt": "word " * 400_000, "max_tokens": 2}),
])
def test_a_prompt_far_past_the_context_is_refused_before_tokenizing_it(serve, tiny_engine, monkeypatch, path, body):
    tokenized: list[int] = []
    cls = type(tiny_engine.tokenizer)
    real = cls.__call__
    monkeypatch.setattr(cls, "__call__", lambda self, text, *a, **k: (tokenized.append(len(text)), real(self, text, *a, **k))[1])
    response = http(serve(tiny_engine)).post(path, json=body)
    assert response.status_code == 400 and response.json()["error"]["code"] == "context_length_exceeded"
    assert "256" in response.json()["error"]["message"]
    assert max(tokenized, default=0) < 100_000  # never the whole 2 MB


def test_a_lone_surrogate_becomes_a_replacement_character(serve, tiny_engine):
    h = http(serve(tiny_engine))
    broken = _post_raw(h, "/v1/chat/completions", chat_body("a\ud800b"))
    fixed = _post_raw(h, "/v1/chat/completions", chat_body("a\ufffdb"))
    assert broken.status_code == 200, broken.text
    assert broken.json()["usage"]["prompt_tokens"] == fixed.json()["usage"]["prompt_tokens"]
    completion = _post_raw(h, "/v1/completions", {"prompt": "x\udfffy", "max_tokens": 2})
    assert completion.status_code == 200, completion.text


def test_lone_surrogates_echoed_back_never_make_a_500(serve, tiny_engine):
    """Responses echoes `instructions`, `metadata` and tools' descriptions: each cleaned to U+FFFD,
    the reply answered and the stored response readable again (it was a 500 after the reply)."""
    h = http(serve(tiny_engine))
    body = {"input": "hi", "max_output_tokens": 2, "instructions": "be\ud800brief",
            "metadata": {"note": "x\udfffy"}, "store": True,
            "tools": [{"type": "function", "name": "look", "description": "finds\ud83d things",
                       "parameters": {"type": "object", "properties": {}}}]}
    created = _post_raw(h, "/v1/responses", body)
    assert created.status_code == 200, created.text
    assert created.json()["instructions"] == "be\ufffdbrief"
    assert created.json()["metadata"] == {"note": "x\ufffdy"}
    again = h.get(f"/v1/responses/{created.json()['id']}")
    assert again.status_code == 200, again.text
    assert again.json()["tools"][0]["description"] == "finds\ufffd things"
    chat = _post_raw(h, "/v1/chat/completions", {**chat_body("hi"), "metadata": {"k": "\ud800"}, "max_tokens": 2})
    assert chat.status_code < 500, chat.text
    messages = _post_raw(h, "/v1/messages", {"model": tiny_engine.source, "max_tokens": 2, "system": "s\ud800",
                                             "messages": [{"role": "user", "content": "hi"}]})
    assert messages.status_code == 200, messages.text


def test_streamed_events_carry_the_cleaned_text_too(serve, tiny_engine):
    h = http(serve(tiny_engine))
    streamed = _post_raw(h, "/v1/responses", {"input": "hi", "max_output_tokens": 2, "stream": True,
                                              "instructions": "be\ud800brief"})
    assert streamed.status_code == 200
    created = next(json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: "))
    assert created["response"]["instructions"] == "be\ufffdbrief"
