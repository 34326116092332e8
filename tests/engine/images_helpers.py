"""Test images and messages: seeded random pixels written as PNG (engine/bench/vision_model.py)."""

from __future__ import annotations

from engine import SamplingParams, image_part
from engine.bench.vision_model import png

__all__ = ["asking", "greedy", "png"]


def asking(image: bytes, text: str = "What is in this picture?") -> list[dict]:
    """One user message holding `image` and a question."""
    return [{"role": "user", "content": [image_part(image), {"type": "text", "text": text}]}]


def greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_stop=True)
