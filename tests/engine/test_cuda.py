"""The torch backend on a CUDA GPU: chosen by default, captured decode graphs that give the tokens of a
session alone, 4-bit layers, and two engines with a stream each.

CI has no GPU, so these skip there; on a machine with one, run them with the rest of the torch engine
tests (README, "Tests on a CUDA GPU"), which then run on the GPU too (device "auto" picks CUDA).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from engine import Engine, EngineConfig
from engine.backends import torch_int4
from tests.engine.helpers import prompt_ids, token_ids
from tests.engine.test_batching import TEXTS, alone, greedy, watched_with_others

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _count_replays(engine: Engine) -> list[int]:
    """Wrap each captured graph so the test sees which buckets were replayed."""
    arena = engine._worker.backend.arena
    replayed: list[int] = []

    class Counted:
        def __init__(self, bucket, graph):
            self.bucket, self.graph = bucket, graph

        def replay(self):
            replayed.append(self.bucket)
            self.graph.replay()

    arena.graphs = {b: (Counted(b, g), out) for b, (g, out) in arena.graphs.items()}
    return replayed


def test_the_torch_backend_runs_on_the_gpu_by_default_in_its_best_dtype(tiny_models):
    engine = Engine.load(str(tiny_models["llama"]), EngineConfig(backend="torch", max_context=1024))
    try:
        assert engine.device == "cuda"
        best = "bfloat16" if torch.cuda.get_device_capability() >= (8, 0) else "float16"
        assert engine.dtype == best
        with engine.open_session() as s:
            assert len(token_ids(s.generate(prompt_ids(engine, TEXTS[0]), greedy(16)))) == 16
    finally:
        engine.close()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_captured_decode_graphs_give_the_tokens_of_a_session_alone(make_engine, tiny_models, dtype):
    if dtype == "bfloat16" and torch.cuda.get_device_capability() < (8, 0):
        pytest.skip("no bfloat16 on this GPU")
    engine = make_engine(tiny_models["llama"], "torch", max_batch=8, dtype=dtype)
    assert sorted(engine._worker.backend.arena.graphs) == [1, 2, 4, 8]
    replayed = _count_replays(engine)
    solo = alone(engine, 48)
    for n_others in (1, 3, 7):  # buckets 2, 4 and 8, pad rows in the 4 and 8 ones
        got, rows = watched_with_others(engine, n_others, 48)
        assert got == solo, n_others
    assert {1, 2, 4, 8} <= set(replayed)  # a lone session steps through the graph too


def test_captured_graphs_give_the_tokens_of_eager_batches(make_engine, tiny_models, monkeypatch):
    captured = make_engine(tiny_models["qwen3"], "torch", max_batch=4)
    assert captured._worker.backend.arena is not None
    monkeypatch.setenv("CONFAB_CUDA_GRAPHS", "0")
    eager = make_engine(tiny_models["qwen3"], "torch", max_batch=4)
    assert eager._worker.backend.arena is None
    assert watched_with_others(captured, 3, 40)[0] == watched_with_others(eager, 3, 40)[0]


@pytest.mark.parametrize("rows", [1, 4, torch_int4.DENSE_ROWS])
def test_a_4bit_layer_on_the_gpu_computes_its_dense_weights(rows):
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 16, (256, 512), dtype=np.uint8)
    scale = rng.random((256, 512 // 32), dtype=np.float32) * 0.01
    zero = rng.standard_normal((256, 512 // 32), dtype=np.float32) * 0.01
    assert torch_int4.probe(codes, scale, zero, "cuda")[0] is None
    layer = torch_int4.from_arrays(codes, scale, zero, None, "cuda")
    dense = torch.from_numpy(torch_int4.dequantize(codes, scale, zero)).cuda()
    x = torch.randn(rows, 512, generator=torch.Generator().manual_seed(4)).cuda()
    with torch.inference_mode():
        got, want = layer(x).float(), x @ dense.t()
    assert float((got - want).abs().max() / want.abs().max()) < 0.02


def test_two_engines_each_run_on_their_own_stream_and_keep_their_tokens(make_engine, tiny_models):
    first = make_engine(tiny_models["llama"], "torch")
    second = make_engine(tiny_models["qwen3"], "torch")
    streams = [e._worker.backend._stream for e in (first, second)]
    assert all(s is not None for s in streams) and streams[0] != streams[1]
    want = [alone(first, 40), alone(second, 40)]
    got: list = [None, None]

    def run(i, engine):
        got[i] = alone(engine, 40)

    threads = [threading.Thread(target=run, args=(i, e)) for i, e in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert got == want
