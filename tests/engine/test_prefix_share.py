"""A prompt prefix another live session holds is shared, not computed again (llama.cpp's pool): the
agent pattern of many sessions with one long system prompt holds it once, and every reply's tokens
are exactly those of an engine that computes each prefix itself, whatever the donor does after."""

from __future__ import annotations

import pytest

from engine import SamplingParams
from tests.engine.helpers import prompt_ids

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_stop=True)
SEEDED = SamplingParams(temperature=0.9, seed=3, max_tokens=6, ignore_stop=True)
SYSTEM = ("You are a coding agent. Tools: read_file(path), write_file(path, text), run(command), search(query). "
          "Always explain the plan first, then call one tool at a time, and report what each call returned. ") * 3
TASKS = ["Fix the failing test in parser.py.", "Add a --verbose flag.", "Rename the module to tools.",
         "Write a changelog entry."]


@pytest.fixture
def engines(make_engine, tiny_models):
    """(sharing, computing): the same tiny GGUF, one engine sharing prefixes, one computing each."""
    def make(share: bool):
        return make_engine(tiny_models["llama"], "llamacpp", max_context=512, max_sessions=6, share_prefixes=share)
    return make(True), make(False)


def _replies(engine, params, close_first_after: bool = False) -> tuple[list[list[int]], list]:
    """Four agent sessions, one after another, each with the shared system prompt and its own task;
    then a second turn on the last one. Sessions stay open (the donors stay live)."""
    sessions = [engine.open_session() for _ in TASKS]
    out, stats = [], []
    for session, task in zip(sessions, TASKS):
        chunks = list(session.generate(prompt_ids(engine, SYSTEM + task), params))
        out.append([t for chunk in chunks for t in chunk.token_ids])
        stats.append(chunks[-1].stats)
    if close_first_after:
        sessions[0].close()  # the donor of every later session's prefix goes
    follow = prompt_ids(engine, SYSTEM + TASKS[-1]) + out[-1] + prompt_ids(engine, " Now run the tests.")
    chunks = list(sessions[-1].generate(follow, params))
    out.append([t for chunk in chunks for t in chunk.token_ids])
    stats.append(chunks[-1].stats)
    held = engine.capacity().held_tokens
    for session in sessions[1:] if close_first_after else sessions:
        session.close()
    return out, stats, held


@pytest.mark.parametrize("params", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_shared_prefixes_give_the_same_tokens_and_are_held_once(engines, params):
    sharing, computing = engines
    shared, shared_stats, held_shared = _replies(sharing, params)
    computed, computed_stats, held_computed = _replies(computing, params)
    assert shared == computed
    prefix = len(prompt_ids(sharing, SYSTEM))
    assert all(s.prefilled_tokens < prefix // 2 for s in shared_stats[1:4]), "sessions 2-4 computed the prefix"
    assert all(s.prefilled_tokens > prefix for s in computed_stats[:4])
    assert held_shared < held_computed - 2 * prefix, (held_shared, held_computed)


def test_a_donor_that_ends_or_a_relayout_leaves_its_sharers_tokens_unchanged(engines):
    sharing, computing = engines
    shared, _, _ = _replies(sharing, GREEDY, close_first_after=True)
    computed, _, _ = _replies(computing, GREEDY, close_first_after=True)
    assert shared == computed
    # Lay the pool out again with sharers live (the closed donor's cells are retired): same tokens on.
    a, b = sharing.open_session(), sharing.open_session()
    first = a.generate(prompt_ids(sharing, SYSTEM + TASKS[0]), GREEDY)
    list(first)
    second = b.generate(prompt_ids(sharing, SYSTEM + TASKS[1]), GREEDY)
    before = [t for c in second for t in c.token_ids]
    a.close()
    assert sharing._call(lambda w: w.backend.compact()), "the closed donor's cells were cleared out"
    assert sharing._call(lambda w: w.backend.cells.shared.shares) == {}, "its sharer owns those cells now"
    c = computing.open_session()
    ref = c.generate(prompt_ids(computing, SYSTEM + TASKS[1]), GREEDY)
    assert before == [t for ch in ref for t in ch.token_ids]
    again = prompt_ids(sharing, SYSTEM + TASKS[1]) + before + prompt_ids(sharing, " And?")
    assert [t for ch in b.generate(again, GREEDY) for t in ch.token_ids] == \
        [t for ch in c.generate(again, GREEDY) for t in ch.token_ids]


def test_a_relayout_keeps_sharing_and_the_sharers_tokens(engines):
    sharing, computing = engines
    donor, sharer, gone = (sharing.open_session() for _ in range(3))
    list(gone.generate(prompt_ids(sharing, "Something else entirely, to be retired."), GREEDY))
    list(donor.generate(prompt_ids(sharing, SYSTEM + TASKS[0]), GREEDY))
    first = [t for c in sharer.generate(prompt_ids(sharing, SYSTEM + TASKS[1]), GREEDY) for t in c.token_ids]
    gone.close()  # retired cells below the shared ones
    held = sharing.capacity().held_tokens
    assert sharing._call(lambda w: w.backend.compact())
    assert sharing._call(lambda w: len(w.backend.cells.shared.shares)) == 1, "still shared after the relayout"
    assert sharing.capacity().held_tokens == held
    follow = prompt_ids(sharing, SYSTEM + TASKS[1]) + first + prompt_ids(sharing, " Go on.")
    got = [t for c in sharer.generate(follow, GREEDY) for t in c.token_ids]
    ref_session = computing.open_session()
    ref_first = [t for c in ref_session.generate(prompt_ids(computing, SYSTEM + TASKS[1]), GREEDY) for t in c.token_ids]
    assert ref_first == first
    assert got == [t for c in ref_session.generate(follow, GREEDY) for t in c.token_ids]


def test_bench_agents_reports_the_ratios(tiny_q4_gguf):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "engine", "bench", "--agents", "--json", "--model", str(tiny_q4_gguf),
                          "--sessions", "3", "--agent-prefix-tokens", "300", "--agent-task-tokens", "20"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert {"pool_ratio", "warm_ttft_ratio", "restart_ttft_ratio"} <= set(figures)
    assert figures["identical"] is True
    assert figures["pool_ratio"] < figures["pool_ratio_without_sharing"]
    assert figures["restart_identical"] is True
    assert figures["restart_prefilled_tokens"] <= 20 + 300 - 256, "the restarted engine read the prefix's block"
    assert figures["restart_ttft_ratio"] > 0
