"""The llama.cpp context every engine session lives in: one unified K/V pool, flash attention, the
decode threads the thread policy chose. Apart from llamacpp.py so that the choices, and why each was
made, read in one place."""

from __future__ import annotations

import llama_cpp as lc

from .llamacpp_library import CACHE_GGML_TYPES


def context_params(pool_tokens: int, batch_size: int, n_ubatch: int, n_seq: int, threads: int,
                   cache_types: tuple[str, str], on_gpu: bool):
    """`llama_context_params` for a pool of `pool_tokens` cells shared by `n_seq` sequences."""
    cp = lc.llama_context_default_params()
    cp.n_ctx = pool_tokens
    cp.n_batch = batch_size
    cp.n_ubatch = n_ubatch
    cp.n_seq_max = n_seq + 2  # ids for the retired cells (llamacpp_cells.py) and scratch (llamacpp_blocks.py)
    cp.n_threads = cp.n_threads_batch = threads  # fewer on a crowded machine (thread_policy.py)
    cp.kv_unified = True
    cp.type_k, cp.type_v = (CACHE_GGML_TYPES[t] for t in cache_types)
    # Flash attention skips the cells of other sequences (masked) instead of summing their zeros,
    # in cell order: a session's attention then does not depend on who shares the pool or a
    # decode (greedy tokens alone = batched, restored = never left), and costs what its own
    # cells cost rather than the whole pool's span. On the CPU a skipped cell is nearly free only
    # with Confab's patch to llama.cpp (packaging/llama_source.py: runs of masked cells skipped four
    # at a time); as published, 8 sessions of 300 tokens decoded 12 % slower here than in llama.cpp's
    # per-sequence streams, and 38 % with 6,400 idle cells beside them (with it: 0-4 %).
    cp.flash_attn = True
    cp.no_perf = True
    # With no layer on the GPU, no step goes there either (llama.cpp otherwise sends a long
    # prompt's matrix products to the GPU): "0 layers" means the CPU alone, and the kernel check's
    # fallback from a GPU that computes wrong must leave it entirely.
    cp.op_offload = on_gpu
    return cp
