"""Test images made here (no Pillow in the project): seeded random pixels written as PNG by hand."""

from __future__ import annotations

import struct
import zlib

import numpy as np

from engine import SamplingParams, image_part


def png(width: int, height: int, seed: int = 0) -> bytes:
    """A valid RGB PNG of seeded random pixels."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b""))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def asking(image: bytes, text: str = "What is in this picture?") -> list[dict]:
    """One user message holding `image` and a question."""
    return [{"role": "user", "content": [image_part(image), {"type": "text", "text": text}]}]


def greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_stop=True)
