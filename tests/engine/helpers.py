"""Small helpers for engine tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine import Engine

TEMPLATES = Path(__file__).parent / "data" / "templates"
"""Real chat templates of thinking model families (their sources are named inside each file)."""


def token_ids(stream) -> list[int]:
    """All token ids of a stream, the end token included."""
    return [t for chunk in stream for t in chunk.token_ids]


def prompt_ids(engine: Engine, text: str) -> list[int]:
    return engine.tokenizer(text, add_special_tokens=False).input_ids


def with_template(model_folder: Path, out: Path, family: str) -> Path:
    """A copy of `model_folder` (a tiny model) speaking `family`'s real chat template."""
    shutil.copytree(model_folder, out)
    (out / "chat_template.jinja").write_text((TEMPLATES / f"{family}.jinja").read_text())
    return out
