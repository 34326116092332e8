"""Every backend computes what a float32 torch forward of the same weights computes: a prompt's logits
prefilled in one call, in pieces of 1, 16, 32 and 128 tokens and (llama.cpp) in a joint batch with other
sequences, against each other and against the reference (engine/correctness/reference.py).

This is what catches a wrong kernel on any CPU: llama.cpp's AMX path in llama-cpp-python 0.3.16 gave
logits off by 11.4 at 32 rows or more (issue 25), far past every tolerance here. Each tolerance has
the figure measured on a 2-core AVX2 CPU (no AVX-512, no AMX) beside it.
"""

from __future__ import annotations

import pytest

from engine.correctness import reference as refcheck

TOLERANCE = {  # backend: (between ways of prefilling, against the float32 reference)
    "torch": (1e-3, 1e-3),      # measured: 1.1e-5 / 1.3e-5
    "mlx": (1e-3, 1e-3),        # measured: 0.0 / 2.4e-4
    "llamacpp": (0.05, 1.0),    # float32 GGUF; float16 K/V cache and attention; measured: 6.7e-6 / 0.32
}
GPU_TOLERANCE = {  # the same on a GPU
    # measured on an H200: 0.060 / 0.78. ggml's CUDA backend sets cuBLAS to TF32 math, so float32
    # matmuls of more than one row round their inputs to 10 bits, and one-row ones do not
    "llamacpp": (0.15, 1.5),
}
Q4_TOLERANCE = (0.05, 6.0)
"""The tiny Q4_0/Q4_1/Q8_0 GGUF on llama.cpp; measured 0.0 / 3.7. llama.cpp rounds activations to 8
bits for 4- and 8-bit matmuls, and random untrained weights amplify that rounding: logits of std 4,
errors of 0.6 on average over the 160 positions. The trained bundled model stays within 1.02
(test_reference_bundled.py). Between ways of prefilling, every path agrees exactly here."""


def run_check(engine) -> list[refcheck.Row]:
    tokens = refcheck.prompt_tokens(engine.tokenizer)
    weights, config = refcheck.reference_source(engine.model)
    reference = refcheck.reference_logits(weights, config, tokens)
    rows = engine._call(lambda w: refcheck.compare(w.backend, tokens, reference))
    print("\n".join(f"{engine.backend} {r.label}: {r.vs_one_call} {r.vs_reference}" for r in rows))
    return rows


def test_every_way_of_prefilling_matches_the_float32_reference(make_engine, tiny_models, backend, monkeypatch):
    monkeypatch.setenv("CONFAB_THREADS", "1")  # figures do not depend on threads; a busy machine does
    engine = make_engine(tiny_models["llama"], backend)
    rows = run_check(engine)
    assert [r.label for r in rows][:5] == ["one call", "pieces of 1", "pieces of 16", "pieces of 32", "pieces of 128"]
    assert ("joint with 3 others" in rows[-1].label) == (backend == "llamacpp")
    between, reference = TOLERANCE[backend] if engine.device == "cpu" else GPU_TOLERANCE.get(backend, TOLERANCE[backend])
    assert refcheck.worst(rows, "vs_one_call") <= between
    assert refcheck.worst(rows, "vs_reference") <= reference


def test_a_4bit_gguf_on_llamacpp_matches_its_dequantized_weights(make_engine, tiny_q4_gguf, tmp_path, monkeypatch):
    """Q4_0 weights take llama.cpp's repacked kernels on x86 (AVX2 too): the path AMX replaces."""
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("CONFAB_THREADS", "1")
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    rows = run_check(make_engine(tiny_q4_gguf, "llamacpp"))
    assert refcheck.worst(rows, "vs_one_call") <= Q4_TOLERANCE[0]
    assert refcheck.worst(rows, "vs_reference") <= Q4_TOLERANCE[1]


def test_the_comparison_sees_a_wrong_kernel():
    """The check itself: logits off at 32 rows or more (what the AMX kernel did) fail it."""
    import numpy as np

    class Broken:  # a correct model of logits = position, wrong by 11 when a forward holds ≥ 32 tokens
        _batch_size = 1000

        def new_state(self):
            return [0]

        def compute(self):
            import contextlib
            return contextlib.nullcontext()

        def forward(self, state, tokens):
            state[0] += len(tokens)
            return np.full(4, float(state[0]) + (11.0 if len(tokens) >= 32 else 0.0), dtype=np.float32)

        def step(self, items):
            return [self.forward(s, t) for s, t in items]

    tokens = list(range(160))
    reference = np.repeat(np.arange(1, 161, dtype=np.float32)[:, None], 4, axis=1)
    rows = {r.label: r for r in refcheck.compare(Broken(), tokens, reference)}
    assert rows["pieces of 1"].vs_reference == 0 and rows["pieces of 16"].vs_reference == 0
    assert rows["pieces of 32"].vs_reference == 11 and rows["one call"].vs_reference == 11
    assert rows["pieces of 16"].vs_one_call == 11
