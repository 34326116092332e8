"""Speculative decoding on llama.cpp: drafted tokens checked in the joint round change when tokens
arrive, never which: greedy replies are token-for-token those without drafts, sampled replies keep
the model's distribution, a grammar still holds, and rejected cells leave the pool."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine import Constraint, EngineConfig, SamplingParams
from engine.drafts.lookup import LookupIndex
from engine.drafts.odds import MatchOdds, ReplyOdds
from engine.drafts.speculative import DraftState, Speculator
from tests.engine.helpers import token_ids

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

CODE = '''def total_price(items, tax_rate):
    """Sum the price of every item and add the tax."""
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    tax = subtotal * tax_rate
    return subtotal + tax


def cheapest(items):
    best = None
    for item in items:
        if best is None or item.price < best.price:
            best = item
    return best
'''
EDIT = [{"role": "user", "content": "Repeat this code exactly:\n\n" + CODE}]


def greedy(n: int, **extra) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_stop=True, **extra)


def repeating_prompt(n: int = 40) -> list[int]:
    """A prompt whose own text repeats, so lookup drafts are proposed from the first step."""
    return [17, 23, 29, 31, 37, 41, 43, 47] * (n // 8)


def echo_prompt(engine, start: list[int]) -> list[int]:
    """`start`, the model's own greedy continuation of it, then `start` again: drafts then propose
    that continuation, which a tiny random model follows in part and leaves in part."""
    with engine.open_session() as s:
        return start + token_ids(s.generate(start, greedy(30, speculative=False))) + start


# -- the lookup index -------------------------------------------------------------------------------
def test_lookup_proposes_what_followed_the_longest_latest_match():
    assert LookupIndex([5, 2, 3, 4, 7, 2, 3]).propose(2) == [4, 7]
    assert LookupIndex([1, 2, 3, 9, 2, 3, 4, 1, 2, 3]).propose(2) == [9, 2]  # "1 2 3" beats the later "2 3"
    assert LookupIndex([2, 3, 4, 2, 3, 5, 2, 3]).propose(1) == [5]  # the latest of equal matches
    index = LookupIndex([1, 2, 3, 9, 2, 3])
    index.extend([9])
    assert index.propose(3) == [2, 3, 9]
    assert LookupIndex([5, 6, 7]).propose(4) == []  # nothing repeats: no draft
    assert LookupIndex([5, 5]).propose(3) == [5]  # the suffix never matches itself


# -- planning: adaptive, capped ---------------------------------------------------------------------
def test_a_session_whose_drafts_fail_stops_drafting_and_one_whose_drafts_hold_drafts_more():
    failing, holding = DraftState(LookupIndex()), DraftState(LookupIndex())
    for _ in range(10):
        failing.verdict(2, 0)
        holding.verdict(4, 4)
    assert failing.accept < 0.2 < 0.9 < holding.accept
    candidates = [(failing.accept ** j, 0) for j in (1, 2)] + [(holding.accept ** j, 1) for j in range(1, 9)]
    taken = Speculator._allot(candidates, 2, 2, ratio=0.25, room=32, limit=None)
    assert taken[0] == 0 and taken[1] >= 4
    # the failing session drafts nothing, so the other's drafts may slow the round only so much
    limit = (1 + 0.25 * 2) * 1.25
    capped = Speculator._allot(candidates, 2, 2, ratio=0.25, room=32, limit=limit)
    assert 0 < capped[1] < taken[1] and 1 + 0.25 * (2 + capped[1]) <= limit
    assert sum(Speculator._allot(candidates, 2, 2, ratio=0.25, room=3, limit=None)) == 3


def test_a_failed_session_probes_again_later():
    state = DraftState(LookupIndex())
    for _ in range(20):
        state.verdict(1, 0)
    low = state.accept
    for _ in range(100):
        state.idle()
    assert state.accept > low


# -- the engine: same tokens, fewer forwards ------------------------------------------------------
@pytest.mark.parametrize("kind", ["llama", "qwen3"])
def test_greedy_replies_are_the_same_with_and_without_drafts(make_engine, tiny_models, kind, draft_everything):
    on = make_engine(tiny_models[kind], "llamacpp")
    off = make_engine(tiny_models[kind], "llamacpp", speculative=False)
    prompt = echo_prompt(off, list(range(100, 116)))
    with on.open_session() as a, off.open_session() as b:
        last_on = list(a.generate(prompt, greedy(60)))
        last_off = list(b.generate(prompt, greedy(60)))
        assert token_ids(last_on) == token_ids(last_off)
        assert a.state_nbytes == b.state_nbytes  # the rejected drafts' cells are gone
    assert last_on[-1].stats.drafted_tokens > 0
    assert last_off[-1].stats.drafted_tokens == 0


def test_penalized_greedy_replies_are_the_same_with_and_without_drafts(make_engine, tiny_models, draft_everything):
    # each drafted row is sampled with the tokens taken before it in its window, as without drafts
    # (penalties mild enough that the reply still follows the echo its drafts come from)
    on = make_engine(tiny_models["llama"], "llamacpp")
    off = make_engine(tiny_models["llama"], "llamacpp", speculative=False)
    prompt = echo_prompt(off, list(range(100, 116)))
    params = greedy(40, repetition_penalty=1.05, presence_penalty=-0.5, frequency_penalty=0.1, repeat_last_n=32)
    with on.open_session() as a, off.open_session() as b:
        drafted = list(a.generate(prompt, params))
        assert token_ids(drafted) == token_ids(b.generate(prompt, params))
    assert drafted[-1].stats.drafted_tokens > 0


def test_the_bundled_model_repeats_code_the_same_with_drafts_in_fewer_forwards(make_engine, quiet_row_cost):
    on = make_engine("bundled:smollm2-135m-instruct", "llamacpp")
    off = make_engine("bundled:smollm2-135m-instruct", "llamacpp", speculative=False)
    with on.open_session() as a, off.open_session() as b:
        calls = on._worker.together.calls
        with_drafts = list(a.chat(EDIT, greedy(120)))
        forwards = on._worker.together.calls - calls
        without = list(b.chat(EDIT, greedy(120)))
    assert token_ids(with_drafts) == token_ids(without)
    assert "".join(c.text for c in with_drafts) == "".join(c.text for c in without)
    accepted = with_drafts[-1].stats.accepted_tokens
    assert accepted >= 15  # the code is copied from the prompt: drafts hold
    assert forwards == 120 - accepted  # one prompt call, then one call per token not taken from a draft


def test_replies_together_with_drafts_are_each_the_one_alone_without(make_engine, tiny_models, draft_everything):
    on = make_engine(tiny_models["llama"], "llamacpp")
    off = make_engine(tiny_models["llama"], "llamacpp", speculative=False)
    prompts = [echo_prompt(off, list(range(100, 116))), list(range(200, 240)), echo_prompt(off, [5, 6, 7, 8])]
    alone = []
    for prompt in prompts:
        with off.open_session() as s:
            alone.append(token_ids(s.generate(prompt, greedy(40))))
    sessions = [on.open_session() for _ in prompts]
    streams = [s.generate(p, greedy(40)) for s, p in zip(sessions, prompts)]
    together = [list(stream) for stream in streams]
    assert [token_ids(t) for t in together] == alone
    assert on.capacity().held_tokens == sum(len(p) + 39 for p in prompts)  # no drafted cell left behind
    assert sum(t[-1].stats.drafted_tokens for t in together) > 0


def test_a_request_or_the_engine_setting_turns_drafting_off(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "llamacpp")
    with engine.open_session() as s:
        assert list(s.generate(repeating_prompt(), greedy(30, speculative=False)))[-1].stats.drafted_tokens == 0
    assert EngineConfig().speculative and SamplingParams().speculative
    with pytest.raises(Exception, match="speculative must be True or False"):
        SamplingParams(speculative="no").validate()


def test_sampled_replies_keep_the_models_distribution(make_engine, draft_everything):
    """The token distribution at each position, drafts or not, over many unseeded replies (seeded
    replies step alone and draft nothing, see engine/drafts/speculative.py; unseeded, the two sides share no
    random stream, so this tests the distribution)."""
    on = make_engine("bundled:smollm2-135m-instruct", "llamacpp")
    off = make_engine("bundled:smollm2-135m-instruct", "llamacpp", speculative=False)
    prompt = on.chat_tokens([{"role": "user", "content": "Say it again: the cat sat on the mat, the cat sat on the mat"}])
    runs = 120

    def sample(engine, runs: int) -> tuple[list[list[int]], int, int]:
        replies, drafted, accepted = [], 0, 0
        with engine.open_session() as s:
            for _ in range(runs):
                chunks = list(s.generate(prompt, SamplingParams(temperature=0.8, max_tokens=6, ignore_stop=True)))
                replies.append(token_ids(chunks))
                drafted += chunks[-1].stats.drafted_tokens
                accepted += chunks[-1].stats.accepted_tokens
        return replies, drafted, accepted

    with_drafts, drafted, accepted = sample(on, runs)
    without, _, _ = sample(off, runs)
    assert 0 < accepted < drafted  # drafts were both taken and refused
    # One permutation test of homogeneity over positions 1-5 together (position 0 comes from the
    # prompt's last row: never a draft), replies shuffled whole. It fails only when the observed
    # statistic beats all 5,000 shuffles: by chance, once in 5,001 runs (five tests of 1,000 shuffles
    # each at p > 0.001 failed by chance about once in 200 runs).
    a, b = np.array(with_drafts)[:, 1:6], np.array(without)[:, 1:6]
    observed = _chi2_sum(a, b)
    both, rng = np.concatenate([a, b]), np.random.default_rng(0)
    shuffled = [_chi2_sum(*np.split(rng.permutation(both), 2)) for _ in range(5000)]
    p = (1 + sum(x >= observed for x in shuffled)) / 5001
    assert p > 1 / 5001, f"the token distributions differ (p = {p:.5f})"


def _chi2_sum(a: np.ndarray, b: np.ndarray) -> float:
    return sum(_chi2(a[:, i], b[:, i]) for i in range(a.shape[1]))


def _chi2(a: np.ndarray, b: np.ndarray) -> float:
    # the 2 × tokens table of counts (every token seen in either), by one bincount per side: 5,001
    # tables per test, where a comparison per token took 5 s of it
    tokens, index = np.unique(np.concatenate([a, b]), return_inverse=True)
    counts = np.array([np.bincount(index[:len(a)], minlength=len(tokens)),
                       np.bincount(index[len(a):], minlength=len(tokens))], dtype=float)
    expected = counts.sum(0, keepdims=True) * counts.sum(1, keepdims=True) / counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def test_a_json_schema_reply_keeps_its_grammar_with_drafts(make_engine):
    on = make_engine("bundled:smollm2-135m-instruct", "llamacpp")
    off = make_engine("bundled:smollm2-135m-instruct", "llamacpp", speculative=False)
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "city": {"type": "string"}},
              "required": ["name", "city"], "additionalProperties": False}
    messages = [{"role": "user", "content": 'Give this as JSON: {"name": "Ada Lovelace", "city": "London"} '
                                            'and {"name": "Ada Lovelace", "city": "London"}'}]
    params = SamplingParams(temperature=0, max_tokens=40, constraint=Constraint.json_schema(schema))
    with on.open_session() as a, off.open_session() as b:
        with_drafts = list(a.chat(messages, params))
        without = list(b.chat(messages, params))
    text = "".join(c.text for c in with_drafts)
    assert token_ids(with_drafts) == token_ids(without)
    assert set(json.loads(text)) == {"name", "city"}
    assert with_drafts[-1].stats.drafted_tokens > 0


def test_a_drafted_token_the_grammar_forbids_is_not_checked(make_engine):
    engine = make_engine("bundled:smollm2-135m-instruct", "llamacpp")
    guide = engine._guides.start(Constraint.regex(r"ab+c"))
    ids = [engine.tokenizer(t, add_special_tokens=False).input_ids[0] for t in ("a", "b", "x", "c")]
    assert guide.allows([ids[0], ids[1], ids[1], ids[2], ids[3]]) == 3  # "x" is refused, and all after it
    assert guide.allows([ids[0], ids[1], ids[3]]) == 3


def test_a_drafting_session_and_an_undrafted_one_share_a_call(make_engine, tiny_models, draft_everything):
    """One joint call with drafts for one session only: the other gets its own logits row (a bug once
    handed it a (1, vocab) array and poisoned it)."""
    on = make_engine(tiny_models["llama"], "llamacpp")
    off = make_engine(tiny_models["llama"], "llamacpp", speculative=False)
    echo, plain = echo_prompt(off, list(range(100, 116))), list(range(300, 340))
    alone = []
    for prompt in (echo, plain):
        with off.open_session() as s:
            alone.append(token_ids(s.generate(prompt, greedy(30))))
    calls = []
    real_step = on._worker.backend.step
    on._worker.backend.step = lambda items, *rows: (calls.append(rows), real_step(items, *rows))[1]
    drafting, plain_session = on.open_session(), on.open_session()
    streams = [drafting.generate(echo, greedy(30)), plain_session.generate(plain, greedy(30, speculative=False))]
    assert [token_ids(s) for s in streams] == alone
    assert any(rows and sorted(rows[0])[0] == 1 < max(rows[0]) for rows in calls)  # a mixed call happened


# -- the odds of a lookup draft ---------------------------------------------------------------------
def test_a_long_match_is_drafted_where_rows_are_dear_and_a_one_token_match_is_not():
    """Rows as dear as measured on two AVX2 cores (one more row costs 1.1 of a round's fixed time):
    only drafts likely to hold are worth it."""
    engine, reply = MatchOdds(), ReplyOdds()
    for match, most in ((4, 12), (1, 12)):
        candidates = [(p, 0) for p in reply.chances(engine, match, most)]
        taken = Speculator._allot(candidates, 1, 1, ratio=1.1, room=32, limit=None)[0]
        assert (taken >= 2) if match == 4 else (taken == 0), (match, taken)


def test_a_reply_whose_long_matches_fail_stops_drafting_them_without_stopping_the_others():
    engine, writing, quoting = MatchOdds(), ReplyOdds(), ReplyOdds()
    for _ in range(12):
        writing.learn(engine, 4, 3, 0)
        quoting.learn(engine, 4, 6, 6)
    assert writing.chances(engine, 4, 1)[0] < 0.3
    assert quoting.chances(engine, 4, 1)[0] > 0.85
    assert ReplyOdds().chances(engine, 4, 1)[0] > 0.55  # a new reply, between the two, still drafts them
    low = writing.chances(engine, 4, 1)[0]
    for _ in range(200):  # rounds without drafts: it tries again later
        writing.forget(0.01)
    assert writing.chances(engine, 4, 1)[0] > low + 0.2


def test_a_draft_is_judged_only_up_to_the_first_rejected_one():
    engine, reply = MatchOdds(), ReplyOdds()
    reply.learn(engine, 2, drafted=5, accepted=2)  # taken, taken, refused; the last two were never judged
    assert (reply.first[2].taken, reply.first[2].tried) == (1, 1)
    assert (reply.next[2].taken, reply.next[2].tried) == (1, 2)
    reply.learn(engine, 2, drafted=0, accepted=0)  # a reply that ended before its draft was judged
    assert reply.first[2].tried == 1


def test_the_bench_reports_every_figure_with_the_same_text(gguf_source, tiny_models):
    """`python -m engine bench --speculative`: the issue's keys, the ceiling beside them, and greedy
    texts equal with and without drafts (the figures themselves are the machine's, not asserted)."""
    from engine.bench.speculative import speculative_figures

    figures = speculative_figures(str(gguf_source(tiny_models["llama"])), lambda *a: None, tokens=12)
    for key in ("edit_speedup", "chat_speedup", "edit8_speedup", "acceptance", "step_ms_1", "step_ms_13"):
        assert figures[key] >= 0, key
    assert figures["same_text"] and figures["edit_tokens"] == figures["chat_tokens"] == 12
    assert 0 < figures["ceiling"] <= 13


def test_what_a_row_costs_is_kept_through_a_stretch_of_rounds_of_one_size():
    """A reply without drafts (all one-row rounds) must not make the engine forget the measured row
    cost and fall back to its prior (it did: the fit decays, and one-size rounds cannot fit a slope)."""
    from engine.drafts.model_cost import PRIOR_ROW_COST, RowCost

    cost = RowCost()
    for rows in [1, 5, 1, 9, 1, 3] * 10:
        cost.observe(rows, 0.010 + 0.002 * rows)  # fixed 10 ms, 2 ms a row: ratio 0.2
    assert abs(cost.ratio() - 0.2) < 0.01
    for _ in range(500):
        cost.observe(1, 0.012)
    assert abs(cost.ratio() - 0.2) < 0.01 and PRIOR_ROW_COST != 0.2


def test_the_rounds_may_move_the_probed_row_cost_only_so_far():
    """Rounds of clustered sizes fit a slope badly (measured in one bench: 0.08 to 3.2 on one machine,
    where a probe said 1.1): the probe bounds the fit."""
    from engine.drafts.model_cost import PROBE_SPAN, RowCost

    cost = RowCost(probed=1.1)
    assert cost.ratio() == 1.1  # nothing fitted yet
    for rows in [8, 9, 8, 10, 8, 9] * 10:
        cost.observe(rows, 0.100 + 0.001 * rows)  # a fit of 0.01
    assert cost.ratio() == pytest.approx(1.1 / PROBE_SPAN)


def test_an_engine_probes_what_a_row_costs_once_it_drafts(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "llamacpp")
    speculator = engine._worker.together.speculator
    assert speculator.cost.probed is None
    with engine.open_session() as s:
        list(s.generate(repeating_prompt(), greedy(4)))
    # The probe ran once; its figure is a timing, which a crowded machine may leave unknown (None:
    # the prior cost stands), so only its range is checked here. probe_ratio's arithmetic is tested
    # on given timings below.
    assert speculator._usable is True
    assert speculator.cost.probed is None or 0.01 <= speculator.cost.probed <= 4.0
    assert engine.capacity().held_tokens == 0  # the probe's scratch cells are gone


def test_a_row_cost_probe_reads_its_timings_and_says_when_they_cannot_tell(monkeypatch):
    from engine.drafts import model_cost

    monkeypatch.setattr(model_cost, "step_seconds", lambda backend, seq, rows: (0.010, 0.030))
    assert abs(model_cost.probe_ratio(None, None) - 0.0025 / 0.0075) < 1e-9  # b / a of one row
    monkeypatch.setattr(model_cost, "step_seconds", lambda backend, seq, rows: (0.010, 0.009))
    assert model_cost.probe_ratio(None, None) is None  # 9 rows no slower than 1: noise, not a cost
