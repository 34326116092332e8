"""Sessions never see each other's state: a session's greedy tokens do not depend on its neighbours."""

from __future__ import annotations

import pytest

from engine import SamplingParams

from tests.engine.helpers import prompt_ids, token_ids

N = 64
PARAMS = SamplingParams(temperature=0.0, max_tokens=N, ignore_stop=True)
PROMPTS = {
    "a": "The history of the printing press begins",
    "b": "Write a short poem about the sea and the wind over the harbour at night",
    "c": "List three prime numbers:",
}
N_BUNDLED = 32
"""The bundled model's replies are half as long as the tiny models': MLX on two CPU cores decodes it at
~5 tok/s (this test took 50 s on MLX with 64), and 32 greedy rounds of the three interleaved replies
each still have to leave `a`'s tokens as they are alone."""


def solo_and_interleaved(engine, params: SamplingParams = PARAMS) -> tuple[list[int], list[int], list[int]]:
    with engine.open_session() as s:
        alone = token_ids(s.generate(prompt_ids(engine, PROMPTS["a"]), params))
    sessions = {k: engine.open_session() for k in PROMPTS}
    # Start all three before reading any: the engine thread steps them in turn, token by token.
    streams = {k: sessions[k].generate(prompt_ids(engine, p), params) for k, p in PROMPTS.items()}
    together = {k: token_ids(st) for k, st in streams.items()}
    for s in sessions.values():
        s.close()
    return alone, together["a"], together["b"]


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_tiny_models_interleaved_equals_alone(make_engine, tiny_models, backend, arch):
    engine = make_engine(tiny_models[arch], backend)
    alone, interleaved, other = solo_and_interleaved(engine)
    assert len(alone) == N
    assert interleaved == alone
    assert other != alone


def test_bundled_model_interleaved_equals_alone(make_engine, backend):
    engine = make_engine("bundled:smollm2-135m-instruct", backend)
    params = SamplingParams(temperature=0.0, max_tokens=N_BUNDLED, ignore_stop=True)
    alone, interleaved, other = solo_and_interleaved(engine, params)
    assert len(alone) == N_BUNDLED
    assert interleaved == alone
    assert other != alone


def test_neighbours_cancelled_reset_and_closed_mid_reply(tiny_engine):
    engine = tiny_engine
    with engine.open_session() as s:
        alone = token_ids(s.generate(prompt_ids(engine, PROMPTS["a"]), PARAMS))
    a, b, c, d = (engine.open_session() for _ in range(4))
    long = SamplingParams(temperature=0.0, max_tokens=N * 4, ignore_stop=True)
    stream_a = a.generate(prompt_ids(engine, PROMPTS["a"]), PARAMS)
    stream_b = b.generate(prompt_ids(engine, PROMPTS["b"]), long)
    stream_c = c.generate(prompt_ids(engine, PROMPTS["c"]), long)
    stream_d = d.generate(prompt_ids(engine, PROMPTS["c"]), long)
    got = []
    for i, chunk in enumerate(stream_a):
        got.extend(chunk.token_ids)
        if i == 8:
            b.cancel()
        elif i == 16:
            c.reset()
        elif i == 24:
            d.close()
        elif i == 32:  # a newcomer joins mid-way, on a freed slot
            e = engine.open_session()
            stream_e = e.generate(prompt_ids(engine, PROMPTS["b"]), PARAMS)
    assert got == alone
    assert list(stream_b)[-1].finish_reason == "cancelled"
    assert list(stream_c)[-1].finish_reason == "cancelled"
    assert list(stream_d)[-1].finish_reason == "cancelled"
    assert len(token_ids(stream_e)) == N
    for s in (a, b, c, e):
        s.close()
