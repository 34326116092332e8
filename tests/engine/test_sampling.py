"""Sampling: greedy, seeds, filters and penalties behave as documented, on both backends."""

from __future__ import annotations

import numpy as np
import pytest

from engine import SamplingParams
from engine.reply.sampling import apply_repetition_penalty, filtered_probs
from tests.engine.helpers import token_ids


def test_same_seed_same_text_other_seed_other_text(tiny_engine):
    params = SamplingParams(temperature=1.0, top_p=0.95, top_k=50, max_tokens=24, seed=7, ignore_stop=True)
    with tiny_engine.open_session() as a, tiny_engine.open_session() as b:
        first = token_ids(a.generate([5, 6, 7], params))
        assert token_ids(b.generate([5, 6, 7], params)) == first
        b.reset()
        other = SamplingParams(**{**params.__dict__, "seed": 8})
        assert token_ids(b.generate([5, 6, 7], other)) != first


def test_greedy_is_argmax():
    logits = np.array([0.1, 3.0, 2.9, -1.0], dtype=np.float32)
    from engine.reply.sampling import make_sampler

    assert make_sampler(SamplingParams(temperature=0))(logits, []) == 1


@pytest.mark.parametrize(
    "params, kept",
    [
        (SamplingParams(top_k=2), {0, 1}),
        (SamplingParams(top_p=0.5), {0}),
        (SamplingParams(top_p=0.7), {0, 1}),
        (SamplingParams(min_p=0.4), {0, 1}),
        (SamplingParams(), {0, 1, 2, 3}),
    ],
)
def test_filters_keep_the_right_tokens(params, kept):
    probs = filtered_probs(np.log(np.array([0.5, 0.3, 0.15, 0.05])), params)
    assert set(np.flatnonzero(probs)) == kept
    assert probs.sum() == pytest.approx(1.0)


def test_repetition_penalty_lowers_seen_tokens():
    logits = np.array([2.0, -2.0, 1.0], dtype=np.float32)
    out = apply_repetition_penalty(logits, [0, 1, 1], 2.0)
    assert out.tolist() == [1.0, -4.0, 1.0]
