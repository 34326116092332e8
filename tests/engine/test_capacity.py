"""Capacity is estimated from the config, enforced at open, and refused with numbers."""

from __future__ import annotations

import json

import pytest

from engine import SamplingParams
from engine.capacity import bytes_per_session
from engine.errors import CapacityError
from tests.conftest import HEAD_DIM


def test_estimate_matches_a_full_session(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_context=64)
    cap = engine.capacity()
    # 2 layers x 2 kv heads x 16 head dim x (K, V) x 4 bytes per token; K/V buffers grow in whole
    # 256-token chunks (both backends), so the estimate counts max_context rounded up to one.
    per_token = 2 * 2 * HEAD_DIM * 2 * 4
    assert cap.bytes_per_session == per_token * 256
    with engine.open_session() as s:
        chunks = list(s.generate(list(range(100, 130)), SamplingParams(temperature=0, max_tokens=500, ignore_stop=True)))
        assert chunks[-1].finish_reason == "length"
        assert len(s.tokens) == 64
        assert per_token * (len(s.tokens) - 1) <= s.state_nbytes <= cap.bytes_per_session


def test_estimate_bounds_a_session_past_one_chunk(make_engine, tiny_models, backend):
    """Past the first chunk the state grows by another; the estimate still bounds it."""
    engine = make_engine(tiny_models["llama"], backend, max_context=300)
    cap = engine.capacity()
    assert cap.bytes_per_session == 2 * 2 * HEAD_DIM * 2 * 4 * 512
    with engine.open_session() as s:
        chunks = list(s.generate(list(range(100, 280)), SamplingParams(temperature=0, max_tokens=500, ignore_stop=True)))
        assert chunks[-1].finish_reason == "length" and len(s.tokens) == 300
        assert 2 * 2 * HEAD_DIM * 2 * 4 * 299 <= s.state_nbytes <= cap.bytes_per_session


def test_opening_past_max_sessions_fails_with_numbers(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_sessions=2)
    a, b = engine.open_session(), engine.open_session()
    with pytest.raises(CapacityError, match=r"2 of 2 open \(0\.5 MiB per session at max_context, budget \d+ MiB\)"):
        engine.open_session()
    assert engine.capacity().live_sessions == 2
    a.close()
    c = engine.open_session()  # a closed session's slot is free again
    assert engine.capacity().live_sessions == 2
    b.close()
    c.close()


def test_max_sessions_from_memory_budget(make_engine, tiny_models, backend):
    per = 2 * 2 * HEAD_DIM * 2 * 4 * 1024  # max_context 1024: four whole chunks
    engine = make_engine(tiny_models["llama"], backend, memory_budget=3 * per + 10)
    cap = engine.capacity()
    assert (cap.bytes_per_session, cap.max_sessions, cap.budget_bytes) == (per, 3, 3 * per + 10)
    sessions = [engine.open_session() for _ in range(3)]
    with pytest.raises(CapacityError):
        engine.open_session()
    for s in sessions:
        s.close()


def test_default_budget_is_a_share_of_free_memory(tiny_engine):
    import psutil

    cap = tiny_engine.capacity()
    assert 0 < cap.budget_bytes < psutil.virtual_memory().total
    assert cap.max_sessions == cap.budget_bytes // cap.bytes_per_session


@pytest.mark.parametrize(
    "extra, expected",
    [
        ({}, 30 * 3 * 64 * 2 * 2 * 4096),
        ({"layer_types": ["sliding_attention"] * 30, "sliding_window": 512}, 30 * 3 * 64 * 2 * 2 * 512),
    ],
)
def test_estimate_from_config(bundled_folder, extra, expected):
    config = json.loads((bundled_folder / "config.json").read_text()) | extra
    assert bytes_per_session(config, "bfloat16", 4096) == expected
