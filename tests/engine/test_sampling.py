"""Sampling: greedy, seeds, filters and penalties behave as documented, on both backends."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from engine import SamplingParams
from engine.reply.logprobs import token_logprob
from engine.reply.penalties import apply_penalties
from engine.reply.sampling import filtered_probs, make_sampler
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
    out = apply_penalties(logits, [0, 1, 1], SamplingParams(repetition_penalty=2.0))
    assert out.tolist() == [1.0, -4.0, 1.0]


def test_presence_and_frequency_penalties_subtract_as_openai_defines_them():
    # logit - count * frequency - (count > 0) * presence, after the repeat penalty (llama.cpp's order)
    logits = np.array([2.0, 2.0, 2.0, 2.0], dtype=np.float32)
    params = SamplingParams(repetition_penalty=2.0, presence_penalty=0.5, frequency_penalty=0.25)
    out = apply_penalties(logits, [1, 2, 2, 2], params)
    assert out.tolist() == [2.0, 1.0 - 0.25 - 0.5, 1.0 - 0.75 - 0.5, 2.0]


def test_negative_penalties_favour_seen_tokens():
    out = apply_penalties(np.zeros(3, dtype=np.float32), [2], SamplingParams(presence_penalty=-1.0))
    assert out.tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize("last_n, penalized", [(2, {3, 4}), (-1, {1, 2, 3, 4}), (0, set()), (100, {1, 2, 3, 4})])
def test_the_window_is_the_last_n_tokens(last_n, penalized):
    params = SamplingParams(presence_penalty=1.0, repeat_last_n=last_n)
    out = apply_penalties(np.zeros(6, dtype=np.float32), [1, 2, 3, 4], params)
    assert set(np.flatnonzero(out)) == penalized


def test_end_tokens_are_never_penalized():
    params = SamplingParams(repetition_penalty=3.0, presence_penalty=2.0, frequency_penalty=2.0)
    out = apply_penalties(np.ones(4, dtype=np.float32), [0, 3, 0, 3], params, exempt={3})
    assert out[3] == 1.0 and out[0] < 0


def test_penalties_change_the_greedy_choice_and_the_logprobs_agree():
    logits = np.array([3.0, 2.5, 0.0], dtype=np.float32)
    params = SamplingParams(temperature=0, frequency_penalty=1.0, logprobs=1)
    assert make_sampler(params)(logits, [0]) == 1
    best = token_logprob(logits, [0], params, 1)
    assert best.top[0][0] == 1 and best.logprob == pytest.approx(best.top[0][1])


def test_neutral_penalties_leave_the_logits_untouched():
    logits = np.array([1.0, 2.0], dtype=np.float32)
    assert apply_penalties(logits, [0, 1], SamplingParams()) is logits
    assert apply_penalties(logits, [0, 1], SamplingParams(repetition_penalty=2.0, repeat_last_n=0)) is logits


@pytest.mark.parametrize("field, value, words", [
    ("presence_penalty", 2.5, "presence_penalty must be in [-2, 2]"),
    ("frequency_penalty", -3, "frequency_penalty must be in [-2, 2]"),
    ("frequency_penalty", float("nan"), "frequency_penalty must be in [-2, 2]"),
    ("presence_penalty", "1", "presence_penalty must be a number"),
    ("repeat_last_n", -2, "repeat_last_n must be an integer >= -1"),
    ("repeat_last_n", 1.5, "repeat_last_n must be an integer >= -1"),
])
def test_bad_penalties_are_named(field, value, words):
    from engine import InvalidRequestError

    with pytest.raises(InvalidRequestError, match=re.escape(words)):
        SamplingParams(**{field: value}).validate()


PENALIZED = dict(repetition_penalty=1.5, presence_penalty=1.0, frequency_penalty=0.5, repeat_last_n=-1)


def test_penalties_reach_the_logits_and_keep_to_their_window_on_every_backend(tiny_engine):
    # Negative frequency penalties pull a greedy reply onto the tokens it counts in the window,
    # outweighing the tiny model's logits: with the whole session that is the most frequent token
    # (300, 40 times); with the last 48 only 301 and 302, and 300 never comes back. The counts are
    # large enough (a boost of 48) for the tiny models with 64-wide heads too, whose logits spread wider.
    prompt = [300] * 40 + [301] * 24 + [302] * 24
    params = SamplingParams(temperature=0, max_tokens=12, ignore_stop=True, frequency_penalty=-2.0)
    with tiny_engine.open_session() as session:
        replies = {}
        for last_n, penalty in (("plain", 0.0), (-1, -2.0), (48, -2.0)):
            session.reset()
            asked = replace(params, frequency_penalty=penalty, repeat_last_n=48 if last_n == "plain" else last_n)
            replies[last_n] = token_ids(session.generate(prompt, asked))
    assert not set(replies["plain"]) <= {300, 301, 302}
    assert replies[-1][0] == 300
    assert set(replies[48]) <= {301, 302}


def test_penalized_seeded_replies_repeat_exactly_on_every_backend(tiny_engine):
    params = SamplingParams(temperature=1.0, max_tokens=24, seed=5, ignore_stop=True, **PENALIZED)
    with tiny_engine.open_session() as a, tiny_engine.open_session() as b:
        assert token_ids(a.generate([5, 6, 7], params)) == token_ids(b.generate([5, 6, 7], params))
