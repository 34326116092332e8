"""A linear layer held as 4-bit codes, run through torch's own int4 weight-only matmul.

torch ships the kernels (`_weight_int4pack_mm_for_cpu`; `_weight_int4pack_mm` on CUDA sm80+): weights
as 4-bit codes in the kernel's packed layout, one (scale, zero) pair per group of 32 inputs, with
w = (q - 8) * scale + zero. They are used directly rather than through torchao: one op each, no
extra dependency. Their fast paths take bfloat16 activations (on this project's 2-core AVX2 CPU the
float32 variant is a scalar loop, ~50x slower), so a layer casts its input to bfloat16 and its output
back to the model's dtype. The vectorized CPU path is compiled out of some builds (MSVC), which is
why `probe()` checks one real layer against its dense reference, for both answer and speed, before a
model is loaded this way.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
import torch
from torch import nn

GROUP = 32
KERNEL_DTYPE = torch.bfloat16
"""Activation, scale and zero dtype the kernels are fast in."""
MAX_ERROR = 0.03
"""Largest |int4 - dense| / max|dense| the probe accepts (bfloat16 rounding is ~0.004 per element)."""
MAX_SLOWDOWN = 2.0
"""The probe refuses the kernel when one row takes longer than this many times a dense bfloat16
matmul of the same weight: a vectorized build is faster than dense, a scalar one many times slower."""
DENSE_ROWS = 32
"""From this many rows on (prefill chunks) a CPU layer expands its weight and runs a dense matmul."""
TIMED_SHAPE = (2048, 2048)
"""[out, in] of the layer the probe times: big enough that the kernel's path, not its fixed call
overhead, decides (a tiny model's 64-wide layers would say "slow" on any build)."""


class Int4Linear(nn.Module):
    """y = x W^T + b with W held as packed 4-bit codes and per-group (scale, zero) pairs."""

    def __init__(self, codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor,
                 bias: Optional[nn.Parameter], device: str) -> None:
        super().__init__()
        self.out_features, self.in_features = codes.shape
        self.register_buffer("packed", pack(codes, device))
        # The kernel's layout: [in // 32, out, 2] with (scale, zero) last.
        sz = torch.stack([scale.t(), zero.t()], dim=-1).to(device=device, dtype=KERNEL_DTYPE).contiguous()
        self.register_buffer("scales_and_zeros", sz)
        self.bias = bias
        self._mm = torch.ops.aten._weight_int4pack_mm if device == "cuda" else torch.ops.aten._weight_int4pack_mm_for_cpu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        rows = x.reshape(-1, self.in_features)
        if rows.shape[0] >= DENSE_ROWS and self.packed.device.type == "cpu" and UNPACK_OK[0]:
            # Prefill: the kernel is built for few rows (decode); for many, expanding the weight for
            # this one call and running the dense matmul in the model's dtype is several times faster.
            y = rows @ self.dense_weight(x.dtype).t()
        else:
            y = self._mm(rows.to(KERNEL_DTYPE), self.packed, GROUP, self.scales_and_zeros).to(x.dtype)
        y = y.reshape(*shape[:-1], self.out_features)
        return y + self.bias if self.bias is not None else y

    def dense_weight(self, dtype: torch.dtype) -> torch.Tensor:
        """The [out, in] weight the codes stand for, expanded for one call (not kept)."""
        codes = unpack_cpu(self.packed, self.out_features, self.in_features).to(dtype)
        sz = self.scales_and_zeros.to(dtype)
        scale = sz[..., 0].t().repeat_interleave(GROUP, dim=1)
        zero = sz[..., 1].t().repeat_interleave(GROUP, dim=1)
        return (codes - 8) * scale + zero

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int4 groups of {GROUP}"


def pack(codes: torch.Tensor, device: str) -> torch.Tensor:
    """4-bit codes (int values 0..15, [out, in]) in the kernel's packed layout on `device`."""
    codes = codes.to(torch.int32)
    if device == "cuda":
        pairs = (codes[:, ::2] << 4 | codes[:, 1::2]).to(torch.uint8).cuda()
        tiles = next(t for t in (8, 4, 2, 1) if codes.shape[1] % (t * 16) == 0)
        return torch.ops.aten._convert_weight_to_int4pack(pairs, tiles)
    return torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes.contiguous(), 1)


def unpack_cpu(packed: torch.Tensor, out: int, inp: int) -> torch.Tensor:
    """Codes [out, in] back from the CPU kernel's layout: per block of 32 output rows, per input,
    16 bytes holding rows j (low nibble) and j + 16 (high). `probe` checks this on the running build
    (UNPACK_OK) before any layer relies on it."""
    flat = packed.view(out // 32, inp, 16)
    both = torch.cat([flat & 15, flat >> 4], dim=2)  # [block, in, 32 rows]
    return both.permute(0, 2, 1).reshape(out, inp)


UNPACK_OK = [False]
"""Whether unpack_cpu reads this build's layout (set by probe); without it prefill stays on the kernel."""


def from_arrays(codes: np.ndarray, scale: np.ndarray, zero: np.ndarray, bias, device: str) -> Int4Linear:
    return Int4Linear(torch.from_numpy(codes), torch.from_numpy(scale), torch.from_numpy(zero), bias, device)


def quantize_weight(w: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Asymmetric 4-bit codes of a dense [out, in] weight, min/max per group of 32 (like GGUF's Q4_1)."""
    w = w.detach().float().cpu().reshape(w.shape[0], -1, GROUP)
    lo, hi = w.amin(dim=-1), w.amax(dim=-1)
    scale = ((hi - lo) / 15).clamp_min(1e-12)
    codes = ((w - lo[..., None]) / scale[..., None]).round().clamp(0, 15).to(torch.uint8)
    zero = lo + 8 * scale
    return codes.reshape(w.shape[0], -1).numpy(), scale.numpy(), zero.numpy()


def dequantize(codes: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
    return (codes.astype(np.float32) - 8) * np.repeat(scale, GROUP, 1) + np.repeat(zero, GROUP, 1)


def probe(codes: np.ndarray, scale: np.ndarray, zero: np.ndarray, device: str) -> tuple[Optional[str], str]:
    """Run one real layer through the kernel: (None, figures) when usable, else (why not, figures)."""
    try:
        layer = from_arrays(codes, scale, zero, None, device)
        dense = torch.from_numpy(dequantize(codes, scale, zero)).to(device)
        x = torch.randn(4, codes.shape[1], generator=torch.Generator().manual_seed(0)).to(device)
        if device == "cpu" and codes.shape[0] % 32 == 0:
            UNPACK_OK[0] = torch.equal(unpack_cpu(layer.packed, *codes.shape), torch.from_numpy(codes).to(torch.uint8))
        with torch.inference_mode():
            got, want = layer(x).float(), x @ dense.t()
            error = float((got - want).abs().max() / want.abs().max().clamp_min(1e-12))
            if not error <= MAX_ERROR:
                return f"the int4 kernel's answer is off by {error:.3f} of the dense one", ""
            int4_s, dense_s = _timings(device)
    except Exception as e:  # a build without the op, or one that rejects these shapes
        return f"the int4 kernel is not usable here ({type(e).__name__}: {str(e).splitlines()[0][:120]})", ""
    figures = f"one row {int4_s * 1e6:.0f} us vs dense bfloat16 {dense_s * 1e6:.0f} us"
    if int4_s > MAX_SLOWDOWN * dense_s:
        return f"the int4 kernel is slow here ({figures})", figures
    return None, figures


def _timings(device: str) -> tuple[float, float]:
    """Seconds for one row through an int4 layer of TIMED_SHAPE and through its dense bfloat16 twin."""
    rng = np.random.default_rng(0)
    out, inp = TIMED_SHAPE
    codes = rng.integers(0, 16, (out, inp), dtype=np.uint8)
    scale = rng.random((out, inp // GROUP), dtype=np.float32) * 0.01
    zero = rng.standard_normal((out, inp // GROUP), dtype=np.float32) * 0.01
    layer = from_arrays(codes, scale, zero, None, device)
    dense = torch.from_numpy(dequantize(codes, scale, zero)).to(device, KERNEL_DTYPE)
    one = torch.ones(1, inp, device=device, dtype=KERNEL_DTYPE)
    return _best_time(lambda: layer(one), device), _best_time(lambda: torch.nn.functional.linear(one, dense), device)


def _best_time(fn, device: str, repeats: int = 7) -> float:
    """Fastest of a few runs: on a shared machine the minimum is the least noisy figure."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best
