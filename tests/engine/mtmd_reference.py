"""llama.cpp's own way through a prompt with an image, as its CLI and server take it: libmtmd cuts the
prompt's text (the image's place marked) into chunks, `mtmd_helper_eval_chunks` evaluates them into
sequence 0 of a fresh context from position 0, counting the positions each chunk takes, and greedy
tokens follow from the position it returns. The reference for where the engine places an image's
tokens and the text after it (tests/engine/test_vision_mrope.py)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

import llama_cpp as lc

from engine.backends.llamacpp_library import init_library
from engine.backends.llamacpp_vision import library


@dataclass
class Reference:
    prompt: list[Optional[int]]
    """The prompt's token ids as libmtmd cut them, None for each of an image's tokens."""
    reply: list[int]
    """Greedy tokens after the prompt."""
    n_past: int
    """The position after the prompt, as mtmd_helper_eval_chunks counted it."""


def mtmd_greedy(model_path: Path, text: str, image: bytes, n: int, *, n_batch: int, n_ubatch: int,
                threads: int) -> Reference:
    """`text` (holding libmtmd's marker where `image` goes) through llama.cpp's mtmd helper, then `n`
    greedy tokens, on a context set up as the engine's (flash attention, one unified pool, its batch sizes)."""
    init_library()
    mtmd = library()
    lib = mtmd._libmtmd
    _bind(lib)
    params = lc.llama_model_default_params()
    params.n_gpu_layers = 0
    model = lc.llama_model_load_from_file(str(model_path).encode(), params)
    assert model, f"llama.cpp could not load {model_path}"
    cp = lc.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = 1024, n_batch, n_ubatch, 1
    cp.n_threads = cp.n_threads_batch = threads
    cp.kv_unified, cp.flash_attn, cp.no_perf = True, True, True
    ctx = lc.llama_init_from_model(model, cp)
    vp = mtmd.mtmd_context_params_default()
    vp.use_gpu, vp.n_threads, vp.print_timings, vp.verbosity = False, threads, False, 4
    mctx = mtmd.mtmd_init_from_file(str(model_path.parent / "mmproj-model.gguf").encode(), model, vp)
    buf = (ctypes.c_uint8 * len(image)).from_buffer_copy(image)
    bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(mctx, buf, len(image))
    chunks = mtmd.mtmd_input_chunks_init()
    try:
        encoded = text.encode()
        said = mtmd.mtmd_input_text(encoded, False, True)
        assert mtmd.mtmd_tokenize(mctx, chunks, ctypes.byref(said), (ctypes.c_void_p * 1)(bitmap), 1) == 0
        prompt = _ids(mtmd, chunks)
        n_past = lc.llama_pos(0)
        # the helper's batch is n_ubatch: it counts an image's batches with a power-of-two mask
        # (GGML_PAD), and with the engine's n_batch (prefill chunk + sessions) it decodes none of it
        assert n_ubatch & (n_ubatch - 1) == 0, f"n_ubatch {n_ubatch} is no power of two"
        assert lib.mtmd_helper_eval_chunks(mctx, ctx, chunks, 0, 0, n_ubatch, True, ctypes.byref(n_past)) == 0
        return Reference(prompt, _greedy(ctx, model, n_past.value, n), n_past.value)
    finally:
        mtmd.mtmd_input_chunks_free(chunks)
        mtmd.mtmd_bitmap_free(bitmap)
        mtmd.mtmd_free(mctx)
        lc.llama_free(ctx)
        lc.llama_model_free(model)


def _bind(lib) -> None:
    fn = lib.mtmd_helper_eval_chunks  # mtmd-helper.h; llama-cpp-python 0.3.16 binds only the single-chunk one
    p = ctypes.c_void_p
    fn.argtypes = [p, p, p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_bool,
                   ctypes.POINTER(ctypes.c_int32)]
    fn.restype = ctypes.c_int32


def _ids(mtmd, chunks) -> list[Optional[int]]:
    out: list[Optional[int]] = []
    for i in range(mtmd.mtmd_input_chunks_size(chunks)):
        chunk = mtmd.mtmd_input_chunks_get(chunks, i)
        if mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
            n = ctypes.c_size_t()
            ids = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
            out += [ids[j] for j in range(n.value)]
        else:
            out += [None] * mtmd.mtmd_input_chunk_get_n_tokens(chunk)
    return out


def _greedy(ctx, model, pos: int, n: int) -> list[int]:
    vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(model))
    batch = lc.llama_batch_init(1, 0, 1)
    out: list[int] = []
    try:
        logits = lc.llama_get_logits_ith(ctx, -1)
        for i in range(n):
            out.append(int(np.argmax(np.ctypeslib.as_array(logits, shape=(vocab,)))))
            if len(out) == n:
                break
            batch.token[0], batch.pos[0], batch.n_seq_id[0], batch.logits[0] = out[-1], pos + i, 1, 1
            batch.seq_id[0][0] = 0
            batch.n_tokens = 1
            assert lc.llama_decode(ctx, batch) == 0
            logits = lc.llama_get_logits_ith(ctx, 0)
    finally:
        lc.llama_batch_free(batch)
    return out
