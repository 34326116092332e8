"""Small helpers for engine tests."""

from __future__ import annotations

from engine import Engine


def token_ids(stream) -> list[int]:
    """All token ids of a stream, the end token included."""
    return [t for chunk in stream for t in chunk.token_ids]


def prompt_ids(engine: Engine, text: str) -> list[int]:
    return engine.tokenizer(text, add_special_tokens=False).input_ids
