"""A position's logits on llama.cpp do not depend on how many rows its step has: one token at a
time, a whole prompt in one call, several of its own rows (drafts being checked) or one row beside
other sessions' rows all give the same float32 logits, bit for bit, whatever formats the GGUF stores.

They once did not, on float32, float16, Q8_0 and Q4_0 weights: ggml hands a step of two or more rows
to llamafile's tinyBLAS and a one-row step to its own dot products, which sum in another order
(measured: 0.0069 apart on the bundled model written as float32, enough that a greedy reply with
drafts was another text than without). bootstrap builds llama.cpp with -DGGML_LLAMAFILE=OFF since.
On Q4_K weights (Q4_K_M files) ggml's repacked kernels for four columns and for one scaled their sums
at different points (1.39 apart at ten rows); packaging/llama_patches.py makes them agree.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

TOKENS = [100 + (i * 37) % 900 for i in range(40)]  # within the 1,024 tokens of the 4-bit tiny model
SPLITS = {"one row a step": [1] * 10, "one row beside another session": None, "two rows a step": [2] * 5,
          "ten rows in one step": [10], "uneven steps": [3, 3, 4]}


def logits_of(backend, split) -> np.ndarray:
    """Logits of TOKENS[30:] after TOKENS[:30] (one call), stepped as `split` says (None: one row a
    step, beside another session's row)."""
    seq, other = backend.new_state(), backend.new_state() if split is None else None
    try:
        backend.step([(seq, TOKENS[:30])])
        rest, out, at = TOKENS[30:], [], 0
        for n in split or [1] * len(rest):
            items = [(seq, rest[at:at + n])] + ([(other, [5])] if other is not None else [])
            out.extend(backend.step(items, [n] + [1] * (len(items) - 1))[0])
            at += n
        return np.stack(out)
    finally:
        backend.free_state(seq)
        if other is not None:
            backend.free_state(other)


@pytest.mark.parametrize("weights", ["float32", "4-bit and 8-bit", "Q4_K and Q6_K"])
def test_a_positions_logits_do_not_depend_on_the_rows_of_its_step(make_engine, tiny_models, gguf_source, request,
                                                                  weights):
    source = {"float32": lambda: gguf_source(tiny_models["llama"]),
              "4-bit and 8-bit": lambda: request.getfixturevalue("tiny_q4_gguf"),
              "Q4_K and Q6_K": lambda: request.getfixturevalue("tiny_k_gguf")}[weights]()
    engine = make_engine(source, "llamacpp", max_context=256, max_sessions=4)
    got = engine._call(lambda w: {name: logits_of(w.backend, split) for name, split in SPLITS.items()})
    reference = got.pop("one row a step")
    for name, logits in got.items():
        assert np.array_equal(logits, reference), f"{name}: {np.abs(logits - reference).max()} apart"
