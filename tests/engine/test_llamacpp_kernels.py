"""The x86 kernels behind a Q4_K_M file, called straight from the installed llama.cpp (ctypes): every
kernel that takes several columns at once gives each column the floats the one-column kernel gives.

ggml multiplies repacked Q4_K weights sixteen, eight (Confab's patch) or four columns at a time and the
rest one at a time, and Confab's Q6_K dot takes two rows by two or four columns: which one a row meets
depends on how many rows share its step, so any difference between them is a row's logits depending
on its neighbours (tests/engine/test_llamacpp_rows.py checks the whole model; this names the kernel).
As published, the one-column Q4_K kernel scaled its sums at other points than the others: 4,760 of
9,216 results differed in their last bits.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import platform
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: no llama.cpp kernels to call")
if platform.machine().lower() not in ("x86_64", "amd64"):
    pytest.skip("these are the x86 kernels (Confab's patches are x86-only)", allow_module_level=True)

P = ctypes.c_void_p
Q8_K_BYTES, Q8_KX4_BYTES, Q4_KX8_BYTES, Q6_K_BYTES = 292, 1168, 1152, 210
"""Sizes of ggml's block_q8_K, block_q8_Kx4, block_q4_Kx8 and block_q6_K (256 values each, per row)."""


@pytest.fixture(scope="module")
def ggml_cpu() -> ctypes.CDLL:
    """libggml-cpu from where llama_cpp loads its libraries (LLAMA_CPP_LIB_PATH, as llama_cpp has it)."""
    folder = os.environ.get("LLAMA_CPP_LIB_PATH") or Path(importlib.util.find_spec("llama_cpp").origin).parent / "lib"
    lib = ctypes.CDLL(str(Path(folder) / "libggml-cpu.so"))
    lib.ggml_cpu_init()
    for name in ("quantize_row_q8_K", "ggml_quantize_mat_q8_K_4x8"):
        getattr(lib, name).argtypes = [P, P, ctypes.c_int64]
    for name in ("ggml_gemv_q4_K_8x8_q8_K", "ggml_gemm_q4_K_8x8_q8_K"):
        getattr(lib, name).argtypes = [ctypes.c_int, P, ctypes.c_size_t, P, P, ctypes.c_int, ctypes.c_int]
    lib.ggml_vec_dot_q6_K_q8_K.argtypes = [ctypes.c_int, P, ctypes.c_size_t, P, ctypes.c_size_t, P,
                                           ctypes.c_size_t, ctypes.c_int]
    return lib


def ptr(a: np.ndarray) -> P:
    return a.ctypes.data_as(P)


def scales_at(blocks: np.ndarray, start: int, count: int, rng, low: float, high: float) -> None:
    """Random bytes are valid quants; their float16 scales are set to small finite values."""
    values = rng.uniform(low, high, blocks.shape[:-1] + (count,)).astype(np.float16)
    blocks[..., start:start + 2 * count] = np.frombuffer(values.tobytes(), np.uint8).reshape(blocks.shape[:-1] + (-1,))


@pytest.mark.parametrize("width", [256, 1024])
def test_repacked_q4_k_gives_each_column_the_same_floats_in_any_group(ggml_cpu, width):
    rng = np.random.default_rng(width)
    blocks = width // 256
    for columns in (4, 8, 12, 16, 20, 24, 28):
        for rows in (16, 24, 48):  # 24: sixteen rows take the AVX-512 loop, the last eight the AVX2 one
            x = (rng.standard_normal((columns, width)) * rng.uniform(0.1, 10, (columns, 1))).astype(np.float32)
            alone = np.zeros((columns, blocks * Q8_K_BYTES), np.uint8)
            for c in range(columns):
                ggml_cpu.quantize_row_q8_K(ptr(x[c]), ptr(alone[c]), width)
            fours = np.zeros((columns // 4, blocks * Q8_KX4_BYTES), np.uint8)
            for g in range(columns // 4):
                ggml_cpu.ggml_quantize_mat_q8_K_4x8(ptr(np.ascontiguousarray(x[4 * g:4 * g + 4])), ptr(fours[g]), width)
            weights = rng.integers(0, 256, (rows // 8, blocks, Q4_KX8_BYTES), dtype=np.uint8)
            scales_at(weights, 0, 16, rng, 1e-3, 1e-2)  # d[8], dmin[8]
            together = np.zeros((columns, rows), np.float32)
            ggml_cpu.ggml_gemm_q4_K_8x8_q8_K(width, ptr(together), rows, ptr(weights), ptr(fours), columns, rows)
            one_by_one = np.zeros((columns, rows), np.float32)
            for c in range(columns):
                ggml_cpu.ggml_gemv_q4_K_8x8_q8_K(width, ptr(one_by_one[c]), rows, ptr(weights), ptr(alone[c]), 1, rows)
            assert np.abs(one_by_one).max() > 1, "the kernels computed something"
            differ = int((together != one_by_one).sum())
            assert differ == 0, f"{columns} columns x {rows} rows: {differ} results differ"


def test_q6_k_two_rows_give_the_one_column_floats(ggml_cpu):
    rng = np.random.default_rng(6)
    width, blocks = 2048, 8
    weights = rng.integers(0, 256, (2, blocks, Q6_K_BYTES), dtype=np.uint8)
    scales_at(weights, Q6_K_BYTES - 2, 1, rng, 1e-4, 3e-4)  # d comes last
    weights = np.ascontiguousarray(weights.reshape(2, -1))
    x = rng.standard_normal((4, width)).astype(np.float32)
    q8 = np.zeros((4, blocks * Q8_K_BYTES), np.uint8)
    for c in range(4):
        ggml_cpu.quantize_row_q8_K(ptr(x[c]), ptr(q8[c]), width)
    one = np.zeros((4, 2), np.float32)
    for c in range(4):
        for r in range(2):
            out = np.zeros(1, np.float32)
            ggml_cpu.ggml_vec_dot_q6_K_q8_K(width, ptr(out), 0, ptr(weights[r]), 0, ptr(q8[c]), 0, 1)
            one[c, r] = out[0]
    assert np.abs(one).max() > 1
    for columns in (2, 4):  # ggml's tile: 16 floats a column
        tile = np.zeros(16 * 4, np.float32)
        ggml_cpu.ggml_vec_dot_q6_K_q8_K(width, ptr(tile), 16, ptr(weights), weights.strides[0], ptr(q8),
                                        q8.strides[0], columns)
        got = tile.reshape(4, 16)[:columns, :2]
        assert np.array_equal(got, one[:columns]), f"{columns} columns: {np.abs(got - one[:columns]).max()} apart"
