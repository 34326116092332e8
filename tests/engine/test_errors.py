"""Every misuse is a named error raised before any compute; a failed forward poisons one session."""

from __future__ import annotations

import pytest

from engine import EngineConfig, SamplingParams
from engine.errors import (
    ContextOverflowError,
    InvalidRequestError,
    SessionBusyError,
    SessionClosedError,
    SessionPoisonedError,
)
from tests.engine.helpers import prompt_ids, token_ids


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(temperature=-1.0), "temperature must be >= 0"),
        (dict(temperature=float("nan")), "temperature must be >= 0"),
        (dict(top_p=0.0), "top_p must be in (0, 1]"),
        (dict(top_p=1.5), "top_p must be in (0, 1]"),
        (dict(top_k=-3), "top_k must be an integer >= 0"),
        (dict(min_p=1.0), "min_p must be in [0, 1)"),
        (dict(repetition_penalty=0.0), "repetition_penalty must be > 0"),
        (dict(max_tokens=0), "max_tokens must be an integer >= 1"),
        (dict(seed="x"), "seed must be an integer or None"),
    ],
)
def test_bad_sampling_values(tiny_engine, params, message):
    with tiny_engine.open_session() as s:
        with pytest.raises(InvalidRequestError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            s.generate([1, 2, 3], SamplingParams(**params))
        assert not s.busy and s.tokens == []


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(backend="jax"), "backend must be auto, torch, mlx or llamacpp"),
        (dict(max_context=4), "max_context must be at least 16"),
        (dict(max_sessions=0), "max_sessions must be at least 1"),
        (dict(dtype="int8"), "dtype must be auto"),
    ],
)
def test_bad_engine_config(config, message):
    with pytest.raises(InvalidRequestError, match=message):
        EngineConfig(**config)


def test_prompt_longer_than_context_fails_before_compute(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_context=32)
    with engine.open_session() as s:
        with pytest.raises(ContextOverflowError, match="40 tokens; max_context is 32"):
            s.generate(list(range(100, 140)), SamplingParams(max_tokens=4))
        assert s.state_nbytes == 0 and not s.busy


def test_reply_stops_at_context_limit(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_context=32)
    with engine.open_session() as s:
        chunks = list(s.generate(list(range(100, 120)), SamplingParams(temperature=0, max_tokens=100, ignore_stop=True)))
        assert chunks[-1].finish_reason == "length"
        assert len(s.tokens) == 32


def test_empty_prompt_and_bad_ids(tiny_engine):
    with tiny_engine.open_session() as s:
        with pytest.raises(InvalidRequestError, match="the prompt is empty"):
            s.generate([])
        with pytest.raises(InvalidRequestError, match="token ids must be in"):
            s.generate([1, 10**9])
        with pytest.raises(InvalidRequestError, match="messages must be a non-empty list"):
            s.chat([])


def test_closed_session(tiny_engine):
    s = tiny_engine.open_session()
    s.close()
    s.close()  # idempotent
    for call in (lambda: s.generate([1, 2]), lambda: s.chat([{"role": "user", "content": "hi"}]),
                 s.reset, lambda: s.save_state("x")):
        with pytest.raises(SessionClosedError, match=f"session {s.id} is closed"):
            call()


def test_second_generation_on_busy_session(tiny_engine):
    with tiny_engine.open_session() as s:
        stream = s.generate([5, 6, 7], SamplingParams(temperature=0, max_tokens=50, ignore_stop=True))
        with pytest.raises(SessionBusyError, match="already generating"):
            s.generate([5, 6, 7])
        assert len(token_ids(stream)) == 50
        assert len(token_ids(s.generate(s.tokens + [9], SamplingParams(max_tokens=2)))) >= 1


def test_failed_forward_poisons_only_its_session(tiny_engine, monkeypatch):
    engine = tiny_engine
    bad, good = engine.open_session(), engine.open_session()
    worker = engine._worker
    real_forward = worker.backend.forward

    def forward(state, ids):
        if state is worker.slots[bad.id].state:
            raise RuntimeError("simulated device fault")
        return real_forward(state, ids)

    monkeypatch.setattr(worker.backend, "forward", forward)
    real_step = getattr(worker.backend, "step", None)
    if real_step is not None:  # llama.cpp steps every session of a round in one call

        def step(items):
            if any(state is worker.slots[bad.id].state for state, _ in items):
                raise RuntimeError("simulated device fault")
            return real_step(items)

        monkeypatch.setattr(worker.backend, "step", step)
    params = SamplingParams(temperature=0, max_tokens=8, ignore_stop=True)
    good_stream = good.generate(prompt_ids(engine, "hello there"), params)
    with pytest.raises(SessionPoisonedError, match="simulated device fault"):
        token_ids(bad.generate(prompt_ids(engine, "hello"), params))
    with pytest.raises(SessionPoisonedError, match="call reset"):
        bad.generate([1, 2, 3])
    assert len(token_ids(good_stream)) == 8  # the other session and the engine go on
    monkeypatch.setattr(worker.backend, "forward", real_forward)
    if real_step is not None:
        monkeypatch.setattr(worker.backend, "step", real_step)
    bad.reset()
    assert len(token_ids(bad.generate([1, 2, 3], params))) == 8
    bad.close()
    good.close()
