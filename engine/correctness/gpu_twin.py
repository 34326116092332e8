"""A GPU's logits against the CPU's, at load: the same probe tokens through the loaded model (layers
on the GPU) and through a CPU twin of it (the same file, no layer and no step on the GPU).

Why: a GPU backend can be consistent with itself and still wrong for a model. Measured here on
ggml's Vulkan backend (Mesa's CPU renderer standing in for a GPU), the tiny test model, whose
attention heads are 16 wide, gave last-position logits 18-25 apart from the CPU's with every layer
on the "GPU" (the same model with 64-wide heads: 0.05), while one call and one-token pieces there
agreed (the load-time probe passed); the bundled model was 0.39 apart, within tolerance (40 tokens;
with 8 the tiny model agreed too). The probe compares a backend with itself; this
compares it with the CPU, which the reference checks tie to float32 torch.

The twin is memory-mapped from the same file (its pages are shared with the page cache, not copied),
with a context just large enough for the probe, and freed at once; it is skipped for a model whose
weights would not comfortably fit in RAM (a CPU pass over a file read from disk would take minutes).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import numpy as np

log = logging.getLogger(__name__)

TWIN_TOKENS = 40
"""Probe tokens the twin reads, in one call: a GPU runs a prompt's rows through other kernels than a
few decode rows (matrix-matrix against matrix-vector), and the wrong ones above were of the first
kind: 8 tokens agreed within 5e-6 where 40 were 25 apart. About a second of a desktop CPU for a 7B."""
MAX_SHARE_OF_RAM = 0.5
"""The twin runs only for weights up to this share of the available memory..."""
MAX_TWIN_BYTES = 16 << 30
"""...and up to this size (beyond it the CPU pass would hold the load up for many seconds)."""


def cpu_logits(path: Path, tokens: list[int], threads: int) -> Optional[np.ndarray]:
    """Last-position logits of `tokens` read in one call by a CPU-only copy of the model at `path`;
    None where llama.cpp could not make it."""
    import llama_cpp as lc

    params = lc.llama_model_default_params()
    params.n_gpu_layers = 0
    model = lc.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        return None
    try:
        cp = lc.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = max(64, len(tokens))
        cp.n_seq_max = 1
        cp.n_threads = cp.n_threads_batch = threads
        cp.flash_attn = True
        cp.op_offload = False  # no step of the twin on the GPU
        cp.no_perf = True
        ctx = lc.llama_init_from_model(model, cp)
        if not ctx:
            return None
        try:
            ids = (lc.llama_token * len(tokens))(*tokens)  # held here: the batch only points at it
            batch = lc.llama_batch_get_one(ids, len(tokens))
            if lc.llama_decode(ctx, batch) != 0:
                return None
            n_vocab = int(lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(model)))
            return np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, -1), shape=(n_vocab,)).copy()
        finally:
            lc.llama_free(ctx)
    finally:
        lc.llama_model_free(model)


def gpu_vs_cpu(backend, tokens: list[int], available_bytes: int) -> Optional[float]:
    """Largest |logit difference| at the last of `tokens` between `backend` (layers on a GPU; one call
    on a scratch sequence, freed after) and its CPU twin; None when the twin is skipped or fails."""
    tokens = tokens[:TWIN_TOKENS]
    if backend.weights_nbytes > min(MAX_SHARE_OF_RAM * available_bytes, MAX_TWIN_BYTES):
        log.info("the GPU's logits are not compared with the CPU's: %.1f GiB of weights, %.1f GiB free",
                 backend.weights_nbytes / 2**30, available_bytes / 2**30)
        return None
    seq = backend.new_state()
    try:
        on_gpu = backend.step([(seq, list(tokens))])[0]
    finally:
        backend.free_state(seq)
    on_cpu = cpu_logits(backend._path, tokens, backend.threads)
    return None if on_cpu is None else float(np.max(np.abs(on_gpu - on_cpu)))
