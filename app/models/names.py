"""One name per model, wherever the window shows it (title, status bar, Load model, a reply's
"written by"): the engine names a bundled model by its source ("bundled:smollm2-135m-instruct"),
which the window turns into the model's own name."""

from __future__ import annotations

import os

from engine import parse_remote_source

BUNDLED_NAMES = {"bundled:smollm2-135m-instruct": "SmolLM2-135M-Instruct"}


def display_name(name: str) -> str:
    """The model's name as the user sees it; any name but a bundled source is kept as it is."""
    return BUNDLED_NAMES.get(name, name)


def same_model_key(source: str) -> str:
    """What makes two sources one model: a path's real location; any other source as written."""
    if not source or source.startswith("bundled:") or parse_remote_source(source) is not None:
        return source
    return os.path.realpath(os.path.expanduser(source))
