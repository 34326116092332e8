"""The static decode arena (what CUDA graphs replay over), run eagerly on the CPU.

Capture itself needs a GPU; everything around it (buckets, pad rows, the fixed-address buffers, the
4-D mask, rollback, split) is the same code and must give the ordinary batched path's tokens.
"""

from __future__ import annotations

import pytest

from engine.backends.torch_graphs import BUCKETS, bucket_for, padded
from tests.engine.test_batch_rollback import inject_fault, run_together
from tests.engine.test_batching import alone, watched_with_others


@pytest.mark.parametrize("rows, bucket", [(1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, 16), (16, 16), (17, None), (0, None)])
def test_bucket_is_the_smallest_that_holds_the_rows(rows, bucket):
    assert bucket_for(rows) == bucket


def test_pad_rows_fill_the_bucket():
    assert padded([7, 8, 9], 4) == [7, 8, 9, 0]
    assert padded([7, 8], 2, fill=5) == [7, 8]
    with pytest.raises(ValueError):
        padded([1, 2, 3], 2)
    assert BUCKETS == (1, 2, 4, 8, 16)


def _arena_engine(make_engine, tiny_models, arch="llama", max_batch=8):
    engine = make_engine(tiny_models[arch], "torch", max_batch=max_batch)
    engine._call(lambda w: w.backend.enable_static_decode(w.config.max_batch, w.config.max_context, capture=False))
    assert engine._call(lambda w: w.backend.arena) is not None
    return engine


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_arena_batches_give_the_tokens_of_a_session_alone(make_engine, tiny_models, arch):
    engine = _arena_engine(make_engine, tiny_models, arch)
    used = []
    real_load = engine._worker.backend.arena.load
    engine._worker.backend.arena.load = lambda states, lengths: (used.append(len(states)), real_load(states, lengths))[1]
    solo = alone(engine, 40)
    for n_others in (1, 3, 7):  # buckets 2, 4 and 8, with pad rows in the 4 and 8 ones
        got, rows = watched_with_others(engine, n_others, 40)
        assert got == solo, n_others
        assert rows
    assert used and max(used) > 2


def test_arena_with_more_sessions_than_its_rows_falls_back_to_eager_batches(make_engine, tiny_models):
    engine = _arena_engine(make_engine, tiny_models, max_batch=8)
    engine._call(lambda w: w.backend.enable_static_decode(2, w.config.max_context, capture=False))
    assert engine._worker.backend.arena.max_rows == 2
    solo = alone(engine, 32)
    got, rows = watched_with_others(engine, 3, 32)
    assert got == solo and max(rows) > 2


def test_arena_rolls_back_a_failed_step_exactly(make_engine, tiny_models, monkeypatch):
    engine = _arena_engine(make_engine, tiny_models)
    clean = run_together(engine, 3)
    calls = inject_fault(engine, "torch", "layer", monkeypatch, fail_at={3, 4, 12})
    assert run_together(engine, 3) == clean
    assert next(calls) > 12
