"""The embedding model computes in bfloat16 only where the CPU does (AVX512-BF16 or AMX), float32
elsewhere, and its bfloat16 vectors stay within cosine 0.999 of the float32 reference."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends import torch_dtype
from engine.backends.torch_dtype import DtypeChoice
from engine.embeddings import Embedder
from engine.embeddings.torch_encoder import choose

PASSAGES = [
    "The with statement calls __enter__ and then __exit__ when the block ends, even after an exception.",
    "Dictionaries preserve insertion order; popitem() returns pairs in LIFO order.",
    "A for loop's else clause runs when the loop ends without break. " * 6,
    "x",
]


@pytest.mark.parametrize("cpu, want", [("bfloat16", "bfloat16"), ("float32", "float32")])
def test_auto_follows_what_the_cpu_computes_in(monkeypatch, cpu, want):
    monkeypatch.setattr(torch_dtype, "_cpu_choice", lambda: DtypeChoice(cpu, f"{cpu}: this CPU says so"))
    assert choose("cpu") == (want, f"{cpu}: this CPU says so")
    assert choose("cpu", "float32") == ("float32", "float32: as configured")
    assert choose("cuda")[0] == "float32"  # not measured on a GPU: the reference precision


def test_this_machine_gets_its_own_choice(embedder):
    """On every CPU: "auto" is what torch's own probes say, and the vectors are the reference's."""
    with Embedder() as auto:
        got = auto.embed(PASSAGES).vectors
        device = auto._runner.worker.encoder.device  # "cpu", or "cuda" where a GPU is (kept in float32)
        assert auto.dtype == choose(device)[1]
    want = embedder.embed(PASSAGES).vectors
    assert embedder.dtype == "float32: as configured"
    assert ((got * want).sum(axis=1) >= 0.999).all()


def test_bfloat16_vectors_stay_close_to_float32(embedder):
    """Asked for (emulated and slow on a CPU without native bfloat16, but the same numbers)."""
    with Embedder(dtype="bfloat16") as half:
        got = half.embed(PASSAGES).vectors
        assert half.dtype == "bfloat16: as configured"
        assert half.memory.weights < embedder.memory.weights * 0.55  # the weights are held in bfloat16
    want = embedder.embed(PASSAGES).vectors
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert ((got * want).sum(axis=1) >= 0.999).all()
