"""A draft model beside the model (llama.cpp): a small model of the same vocabulary guesses each
reply's next tokens; the replies stay the model's own, token for token, however well it guesses,
alone or beside other sessions, and a draft model that cannot draft for this model is refused by name."""

from __future__ import annotations

import pytest

from engine import DraftModelError, EngineConfig
from tests.engine.helpers import token_ids
from tests.engine.test_speculative import EDIT, greedy

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

TALK = [{"role": "user", "content": "Tell me a story about a cat."}]


def test_greedy_replies_with_another_draft_model_are_the_models_own(make_engine, tiny_models, tiny_llama_other_seed,
                                                                   gguf_source, draft_everything):
    """Another model's guesses are mostly wrong: rejected, they change nothing, and leave no cell."""
    on = make_engine(tiny_models["llama"], "llamacpp", draft_model=str(gguf_source(tiny_llama_other_seed)))
    off = make_engine(tiny_models["llama"], "llamacpp", speculative=False)
    assert on.draft_model.startswith(gguf_source(tiny_llama_other_seed).stem) and off.draft_model == ""
    prompts = [list(range(100, 140)), list(range(300, 316)), [7, 8, 9] * 5]
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


def test_the_bundled_model_drafting_for_itself_is_taken_every_time(make_engine, monkeypatch):
    """The same weights guess exactly what greedy decoding picks: every guess is taken, and the text
    is the one without drafts, on code (where lookups agree) and on free text (where only the model
    guesses). (A draft as costly as the model is not worth asking, so here it is asked regardless.)"""
    import engine.drafts.speculative as speculative

    monkeypatch.setattr(speculative, "worth_asking", lambda accepts, wanted, *rest: max(wanted))
    on = make_engine("bundled:smollm2-135m-instruct", "llamacpp", draft_model="bundled:smollm2-135m-instruct")
    off = make_engine("bundled:smollm2-135m-instruct", "llamacpp", speculative=False)
    # A row's cost is measured (a timing): on a crowded machine it came out high and rounds took
    # fewer drafts (8 taken, not 20). What is tested here is taking them, so the cost is fixed.
    monkeypatch.setattr(on._worker.together.speculator.cost, "ratio", lambda: 0.05)
    for messages in (EDIT, TALK):
        with on.open_session() as a, off.open_session() as b:
            calls = on._worker.together.calls
            drafted = list(a.chat(messages, greedy(60)))
            forwards = on._worker.together.calls - calls
            plain = list(b.chat(messages, greedy(60)))
        assert "".join(c.text for c in drafted) == "".join(c.text for c in plain)
        stats = drafted[-1].stats
        assert stats.accepted_tokens >= 20 and stats.accepted_tokens >= 0.9 * stats.drafted_tokens
        assert forwards == 60 - stats.accepted_tokens


def test_the_draft_keeps_up_with_many_conversations_and_forgets_closed_ones(make_engine, tiny_models, gguf_source):
    engine = make_engine(tiny_models["llama"], "llamacpp", draft_model=str(gguf_source(tiny_models["llama"])),
                         max_sessions=3, max_context=256)
    for round_ in range(4):  # more conversations over time than the draft has sequences
        with engine.open_session() as s:
            ids = token_ids(s.generate(list(range(10 + round_, 60 + round_)), greedy(20)))
            assert len(ids) == 20
    draft = engine._worker.draft_model
    assert draft.backend.held_tokens() == 0 and not draft._held  # each closed conversation's sequence went


def test_a_draft_model_of_another_vocabulary_is_refused_by_name(make_engine, tiny_models, tmp_path):
    from engine.models.sources import bundled_gguf
    from tests.engine.gguf_tiny import write_tiny_gguf

    other = write_tiny_gguf(tmp_path / "small-vocab.gguf", bundled_gguf("smollm2-135m-instruct"))
    with pytest.raises(DraftModelError, match="small-vocab.*tokens"):
        make_engine(tiny_models["llama"], "llamacpp", draft_model=str(other))


def test_a_draft_model_needs_llamacpp_and_a_gguf(make_engine, tiny_models):
    with pytest.raises(DraftModelError, match="llama.cpp"):
        make_engine(tiny_models["llama"], "torch", draft_model="bundled:smollm2-135m-instruct")
    with pytest.raises(DraftModelError, match=".gguf"):
        make_engine(tiny_models["llama"], "llamacpp", draft_model=str(tiny_models["qwen3"]))
    with pytest.raises(DraftModelError, match="does not exist"):
        make_engine(tiny_models["llama"], "llamacpp", draft_model="/nowhere/draft.gguf")


def test_draft_model_is_a_source_string():
    with pytest.raises(Exception, match="draft_model"):
        EngineConfig(draft_model=3)


def _measured(fixed: float, per_row: float, rows=(1, 2, 4, 8, 12, 16) * 3):
    from engine.drafts.model_cost import RowCost

    cost = RowCost()
    for n in rows:
        cost.observe(n, fixed + per_row * n)
    return cost


def test_the_draft_model_is_asked_only_as_deep_as_its_cost_is_worth():
    """Measured on 2 cores: the bundled model drafting for its float32 self, asked every round, took 8
    conversations from 62 to 16 tok/s. The depth now comes from what its forwards cost here."""
    from engine.drafts.model_cost import worth_asking
    from engine.drafts.model_cost import RowCost

    model = _measured(0.040, 0.002)  # a round: 40 ms + 2 ms a row
    cheap, dear = _measured(0.002, 0.0005), _measured(0.030, 0.002)
    assert worth_asking([0.9], [6], 1, 1, model, cheap) >= 3  # a cheap draft that is right: guess deep
    assert worth_asking([0.9] * 8, [6] * 8, 8, 8, model, dear) == 0  # nearly the model's cost: never
    assert worth_asking([0.35], [6], 1, 1, model, _measured(0.010, 0.001)) <= 1  # often wrong: shallow
    assert worth_asking([0.9], [4], 1, 1, RowCost(), cheap) == 4  # nothing measured yet: ask, and so measure
    assert model.seconds(10) == pytest.approx(0.060)
