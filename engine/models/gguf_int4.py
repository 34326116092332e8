"""Read GGUF Q4_0 / Q4_1 / Q4_K tensors as 4-bit codes with one (scale, zero) per group of 32.

Every one of these formats decodes a weight as an affine function of a 4-bit code q in 0..15 over a
group of 32 consecutive inputs of one output row, which is exactly the layout of torch's int4
weight-only matmul: w = (q - 8) * scale + zero. So no weight is re-quantized; only scale and zero
round when the kernel holds them in its activation dtype. Per format:

    Q4_0  w = (q - 8) * d                  scale = d,        zero = 0
    Q4_1  w = q * d + m                    scale = d,        zero = m + 8 d
    Q4_K  w = q * (d sc_j) - dmin m_j      scale = d sc_j,   zero = 8 d sc_j - dmin m_j  (j: 32-wide sub-block)

numpy only (no torch) so the format facts can be tested and reused on any build. The block bit
layouts are read with the `gguf` package's own helpers where it has them (Q4_K's 6-bit scales).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GROUP = 32
"""Inputs per (scale, zero) group: the kernel's group size and every Q4 format's sub-block."""

INT4_TYPES = ("Q4_0", "Q4_1", "Q4_K")


@dataclass
class Int4Weight:
    """A [out, in] weight as 4-bit codes and per-group affine terms (w = (q - 8) * scale + zero)."""

    codes: np.ndarray
    """uint8 [out, in], values 0..15."""
    scale: np.ndarray
    """float32 [out, in // 32]."""
    zero: np.ndarray
    """float32 [out, in // 32]."""

    def dequantize(self) -> np.ndarray:
        """The float32 weight these codes stand for (the dense reference)."""
        s = np.repeat(self.scale, GROUP, axis=1)
        z = np.repeat(self.zero, GROUP, axis=1)
        return (self.codes.astype(np.float32) - 8.0) * s + z

    def permute_rows(self, order: np.ndarray) -> "Int4Weight":
        return Int4Weight(self.codes[order], self.scale[order], self.zero[order])


def is_int4(tensor) -> bool:
    """Whether a GGUFReader tensor is in a format that maps onto the int4 kernel without loss."""
    return tensor.tensor_type.name in INT4_TYPES and len(tensor.shape) == 2 and int(tensor.shape[0]) % GROUP == 0


def read_int4(tensor) -> Int4Weight:
    """Codes, scales and zeros of a Q4_0/Q4_1/Q4_K GGUFReader tensor, rows = output features."""
    import gguf

    kind = tensor.tensor_type.name
    cols, rows = int(tensor.shape[0]), int(tensor.shape[1])  # GGUF lists the fastest axis first
    block, nbytes = gguf.GGML_QUANT_SIZES[tensor.tensor_type]
    blocks = np.asarray(tensor.data, dtype=np.uint8).reshape(rows, cols // block, nbytes)
    if kind == "Q4_0":
        d = _f16(blocks[..., 0:2])
        codes = _nibbles(blocks[..., 2:], 1)
        scale, zero = d, np.zeros_like(d)
    elif kind == "Q4_1":
        d, m = _f16(blocks[..., 0:2]), _f16(blocks[..., 2:4])
        codes = _nibbles(blocks[..., 4:], 1)
        scale, zero = d, m + 8.0 * d
    elif kind == "Q4_K":
        d, dmin = _f16(blocks[..., 0:2]), _f16(blocks[..., 2:4])  # [rows, superblocks]
        sc, mn = gguf.quants.Q4_K.get_scale_min(blocks[..., 4:16].reshape(-1, 12))
        sc = sc.reshape(rows, -1, 8).astype(np.float32)
        mn = mn.reshape(rows, -1, 8).astype(np.float32)
        scale = (d[..., None] * sc).reshape(rows, -1)
        zero = (8.0 * d[..., None] * sc - dmin[..., None] * mn).reshape(rows, -1)
        codes = _nibbles(blocks[..., 16:], 4)  # four 64-wide chunks: low nibbles, then high ones
    else:
        raise ValueError(f"{tensor.name}: {kind} is not a 4-bit group format")
    return Int4Weight(codes.reshape(rows, cols), scale.astype(np.float32), zero.astype(np.float32))


def _f16(two_bytes: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(two_bytes).view(np.float16)[..., 0].astype(np.float32)


def _nibbles(qs: np.ndarray, chunks: int) -> np.ndarray:
    """ggml's nibble order: within each chunk of 2*n codes, byte i holds code i (low) and code n+i (high)."""
    rows, nblocks, nbytes = qs.shape
    qs = qs.reshape(rows, nblocks, chunks, 1, nbytes // chunks)
    both = np.concatenate([qs & 0x0F, qs >> 4], axis=3)  # [..., chunk, low/high, byte]
    return both.reshape(rows, nblocks * chunks * 2 * (nbytes // chunks))
