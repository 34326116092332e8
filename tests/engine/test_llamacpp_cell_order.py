"""A session's logits on llama.cpp do not depend on what the shared K/V pool held before it: a
session continued after a neighbour was closed, parked, or had drafts rejected below its cells gets
exactly the logits of the same tokens in a fresh engine (llama.cpp's flash attention sums a
sequence's cells in cell order; engine/backends/llamacpp_cells.py keeps that order the position
order). Before, a hole left below a session took its next tokens and moved its logits by up to 0.93
on the bundled model, and the server's greedy replies changed beside others."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import HEAD_DIM

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

PROMPT = [(7 * i + 11) % 400 + 20 for i in range(30)]
FOLLOW = [(13 * i + 5) % 400 + 20 for i in range(12)]
GPU_ROUNDING = 1e-2
"""How far apart the same session's logits may be on a GPU. Its attention kernel splits a sequence's
cells into blocks by how many cells the pool spans, and sums the blocks' partial results in half
precision, so a pool that held other sessions means other rounding: up to 1.5e-3 on an H200 (0.0 to
1.5e-3 over the eleven steps), where the bug this file guards against moved logits by 0.93. On the
CPU: exactly equal."""


def alone(backend) -> list[np.ndarray]:
    """Logits of PROMPT then FOLLOW, one token at a time, in a pool that held nothing before."""
    seq = backend.new_state()
    try:
        backend.step([(seq, PROMPT)])
        return [backend.step([(seq, [t])])[0] for t in FOLLOW][1:]
    finally:
        backend.free_state(seq)


def after_churn(backend, churn: str, beside: bool) -> list[np.ndarray]:
    """The same, after a neighbour took cells before it and gave some up below its newest cell
    (`churn`), with another session decoding in the same steps when `beside`."""
    neighbour = backend.new_state()
    backend.step([(neighbour, list(range(100, 150)))])
    seq = backend.new_state()
    backend.step([(seq, PROMPT)])
    if churn == "closed":
        backend.step([(seq, FOLLOW[:1])])
        backend.free_state(neighbour)
    elif churn == "rejected drafts":  # the neighbour's 5 rejected drafts lie below seq's newest cell
        backend.step([(neighbour, list(range(200, 206)))], rows=[6])
        backend.step([(seq, FOLLOW[:1])])
        assert backend.trim(neighbour, 5)
    other = backend.new_state()
    try:
        if beside:
            return [backend.step([(seq, [t]), (other, [t + 1])])[0] for t in FOLLOW[1:]]
        return [backend.step([(seq, [t])])[0] for t in FOLLOW[1:]]
    finally:
        for s in (seq, other, neighbour):
            backend.free_state(s)


def fresh_logits(engine_factory, how: str, churn: str = "", beside: bool = False) -> tuple[list[np.ndarray], str]:
    """The logits, and the device the engine ran them on."""
    engine = engine_factory()
    try:
        return engine._call(lambda w: alone(w.backend) if how == "alone" else after_churn(w.backend, churn, beside)), \
            engine.device
    finally:
        engine.close()


def assert_same(solo: list[np.ndarray], churned: list[np.ndarray], device: str) -> None:
    """Exactly the same logits on the CPU; within rounding (GPU_ROUNDING) on a GPU."""
    apart = [float(np.abs(a - b).max()) for a, b in zip(solo, churned)]
    assert len(apart) == len(FOLLOW) - 1
    if device == "cpu":
        assert apart == [0.0] * (len(FOLLOW) - 1)
    else:
        assert max(apart) <= GPU_ROUNDING, apart


@pytest.mark.parametrize("churn", ["closed", "rejected drafts"])
def test_a_session_after_a_neighbour_gave_cells_up_gets_its_logits_alone(make_engine, tiny_models, churn):
    def engine():
        return make_engine(tiny_models["llama"], "llamacpp", max_context=256, max_sessions=4)

    # alone (no neighbour in its steps): the tiny model's float32 weights take other matmul paths
    # for one row and for two on some CPUs, so only the cells' order is what differs here
    solo, device = fresh_logits(engine, "alone")
    churned, _ = fresh_logits(engine, "churn", churn)
    assert_same(solo, churned, device)


def test_the_bundled_model_after_a_neighbour_closed_gets_its_logits_alone():
    from engine import Engine, EngineConfig

    def engine():
        return Engine.load("bundled:smollm2-135m-instruct", EngineConfig(backend="llamacpp", max_context=512,
                                                                           max_sessions=4))

    solo, device = fresh_logits(engine, "alone")
    churned, _ = fresh_logits(engine, "churn", "closed", beside=True)  # its quantized weights: exact beside others too
    assert_same(solo, churned, device)


def test_retired_cells_are_cleared_out_when_a_step_needs_their_room(make_engine, tiny_models):
    # a pool of 256 cells: three sessions of 80 tokens come and go; the next prompt needs their room
    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=256, max_sessions=4,
                         memory_budget=256 * 2 * 2 * (HEAD_DIM + HEAD_DIM) * 2)

    def churn(w):
        b = w.backend
        b.compact()  # the load-time probe's scratch cells
        bystander = b.new_state()
        for start in (0, 80, 160):
            s = b.new_state()
            b.step([(s, list(range(20 + start, 100 + start)))])
            b.step([(bystander, [7])])  # so s's cells are not the topmost: they are retired, not freed
            b.free_state(s)
        assert b.cells.retired == 240
        b.free_state(bystander)
        before = b.cells.relayouts
        keep = b.new_state()
        b.step([(keep, PROMPT)])
        out = [b.step([(keep, [t])])[0] for t in FOLLOW][1:]
        b.free_state(keep)
        return before, b.cells.relayouts, out

    before, after, churned = engine._call(churn)
    assert after == before + 1  # 243 retired cells + 30 new ones do not fit in 256
    solo, _ = fresh_logits(lambda: make_engine(tiny_models["llama"], "llamacpp", max_context=256, max_sessions=4),
                           "alone")
    assert_same(solo, churned, engine.device)


def test_the_topmost_cells_are_freed_outright(make_engine, tiny_models):
    # rejected drafts of the last item of a round (where drafted rows go) leave no dead cells behind
    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=256, max_sessions=4)

    def drafts(w):
        b = w.backend
        a, last = b.new_state(), b.new_state()
        b.step([(a, PROMPT), (last, PROMPT)])
        retired, top = b.cells.retired, b.cells.top
        b.step([(a, [5]), (last, [5, 6, 7, 8])], rows=[1, 4])
        assert b.trim(last, 3)  # three of its drafts rejected: the topmost cells
        assert (b.cells.retired, b.cells.top) == (retired, top + 2)
        b.step([(last, [9, 10]), (a, [6])], rows=[2, 1])
        assert b.trim(last, 1)  # no longer the topmost: retired, so no hole is left below a's newest cell
        assert (b.cells.retired, b.cells.top) == (retired + 1, top + 5)
        for s in (a, last):
            b.free_state(s)

    engine._call(drafts)
