"""Sampling parameters reach the engine: seed, max_tokens / max_completion_tokens, ignore_eos."""

from __future__ import annotations

from tests.server.helpers import client

HI = [{"role": "user", "content": "Tell me something."}]


def test_the_same_seed_gives_the_same_text_and_another_seed_differs(serve, tiny_engine):
    api = client(serve(tiny_engine))

    def sample(seed: int) -> str:
        return api.chat.completions.create(model=tiny_engine.source, messages=HI, temperature=1.0, top_p=0.95,
                                           max_tokens=12, seed=seed).choices[0].message.content

    first = sample(7)
    assert sample(7) == first
    assert any(sample(seed) != first for seed in (8, 9, 10))


def test_max_completion_tokens_bounds_the_reply(serve, tiny_engine):
    api = client(serve(tiny_engine))
    reply = api.chat.completions.create(model=tiny_engine.source, messages=HI, temperature=0,
                                        max_completion_tokens=3, extra_body={"ignore_eos": True})
    assert reply.usage.completion_tokens == 3 and reply.choices[0].finish_reason == "length"


def test_speculative_false_turns_drafting_off_for_that_request(serve, tiny_engine, monkeypatch):
    from engine.server import generation

    seen = []
    real = generation.sampling
    monkeypatch.setattr(generation, "sampling", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    api = client(serve(tiny_engine))
    api.chat.completions.create(model=tiny_engine.source, messages=HI, temperature=0, max_tokens=2,
                                extra_body={"speculative": False})
    api.completions.create(model=tiny_engine.source, prompt="Hi", temperature=0, max_tokens=2,
                           extra_body={"speculative": False})
    api.chat.completions.create(model=tiny_engine.source, messages=HI, temperature=0, max_tokens=2)
    assert [params.speculative for params in seen] == [False, False, True]


def test_speculative_false_reaches_the_engine_through_messages_and_responses(serve, tiny_engine, monkeypatch):
    from engine.server import generation
    from tests.server.helpers import http

    seen = []
    real = generation.sampling
    monkeypatch.setattr(generation, "sampling", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    server = serve(tiny_engine)
    with http(server) as h:
        for speculative in (False, True):
            assert h.post("/v1/messages", json={"messages": HI, "max_tokens": 2,
                                                "speculative": speculative}).status_code == 200
            assert h.post("/v1/responses", json={"input": "Hi", "max_output_tokens": 2,
                                                 "speculative": speculative}).status_code == 200
    assert [params.speculative for params in seen] == [False, False, True, True]
