"""Sampling fields beyond temperature and top-p reach the engine from every API that has them:
OpenAI's presence/frequency penalties, llama.cpp server's top_k, min_p, repeat_penalty and
repeat_last_n (vLLM's repetition_penalty too), Anthropic's top_k."""

from __future__ import annotations

import pytest

from tests.server.helpers import client, http

HI = [{"role": "user", "content": "Tell me something."}]
LLAMA_CPP = {"top_k": 5, "min_p": 0.05, "repeat_penalty": 1.1, "repeat_last_n": 32}
ASKED = {"presence_penalty": 0.5, "frequency_penalty": 0.25, "top_k": 5, "min_p": 0.05,
         "repetition_penalty": 1.1, "repeat_last_n": 32}


@pytest.fixture
def seen(monkeypatch) -> list:
    """The SamplingParams each request gave the engine."""
    from engine.server import generation

    params: list = []
    real = generation.sampling
    monkeypatch.setattr(generation, "sampling", lambda *a, **k: params.append(real(*a, **k)) or params[-1])
    return params


def _fields(params) -> dict:
    return {name: getattr(params, name) for name in ASKED}


def test_openai_and_llama_cpp_fields_reach_the_engine_on_both_endpoints(serve, tiny_engine, seen):
    api = client(serve(tiny_engine))
    api.chat.completions.create(model=tiny_engine.source, messages=HI, max_tokens=2, presence_penalty=0.5,
                                frequency_penalty=0.25, extra_body=LLAMA_CPP)
    api.completions.create(model=tiny_engine.source, prompt="Hi", max_tokens=2, presence_penalty=0.5,
                           frequency_penalty=0.25, extra_body=LLAMA_CPP)
    vllm = {**LLAMA_CPP, "repetition_penalty": LLAMA_CPP["repeat_penalty"]}
    del vllm["repeat_penalty"]
    api.chat.completions.create(model=tiny_engine.source, messages=HI, max_tokens=2, presence_penalty=0.5,
                                frequency_penalty=0.25, extra_body=vllm)
    assert [_fields(p) for p in seen] == [ASKED] * 3


def test_fields_left_out_keep_the_engine_neutral(serve, tiny_engine, seen):
    client(serve(tiny_engine)).chat.completions.create(model=tiny_engine.source, messages=HI, max_tokens=2)
    params = seen[0]
    assert (params.top_k, params.min_p, params.repetition_penalty, params.presence_penalty,
            params.frequency_penalty) == (0, 0.0, 1.0, 0.0, 0.0)


def test_top_k_one_samples_the_greedy_reply_on_every_api(serve, tiny_engine):
    server = serve(tiny_engine)
    api = client(server)
    chat = lambda **kw: api.chat.completions.create(  # noqa: E731
        model=tiny_engine.source, messages=HI, max_tokens=12, **kw).choices[0].message.content
    greedy = chat(temperature=0)
    assert chat(temperature=1.0, seed=3) != greedy  # sampled: the tiny model's flat choices differ
    assert chat(temperature=1.0, seed=3, extra_body={"top_k": 1}) == greedy
    text = lambda **kw: api.completions.create(  # noqa: E731
        model=tiny_engine.source, prompt="Once upon a time", max_tokens=12, **kw).choices[0].text
    assert text(temperature=1.0, seed=3, extra_body={"top_k": 1}) == text(temperature=0)
    with http(server) as h:
        said = [h.post("/v1/messages", json={"messages": HI, "max_tokens": 12, **kw}).json()["content"]
                for kw in ({"temperature": 1.0, "top_k": 1}, {"temperature": 0})]
    assert said[0] == said[1]


@pytest.mark.parametrize("extra, words", [
    ({"presence_penalty": 2.5}, "presence_penalty"),
    ({"frequency_penalty": -3}, "frequency_penalty"),
    ({"repeat_last_n": -2}, "repeat_last_n"),
    ({"repeat_penalty": 0}, "repeat_penalty"),
    ({"min_p": 1.0}, "min_p"),
    ({"top_k": -1}, "top_k"),
    ({"repeat_penalty": 1.1, "repetition_penalty": 1.2}, "one setting"),
])
def test_out_of_range_fields_are_refused_by_name(serve, tiny_engine, extra, words):
    with http(serve(tiny_engine)) as h:
        reply = h.post("/v1/chat/completions", json={"messages": HI, "max_tokens": 2, **extra})
    assert reply.status_code == 400 and words in reply.json()["error"]["message"]
