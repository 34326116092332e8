"""Every error an API user may catch is importable from `engine` itself, not only from a submodule."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import engine
from engine import EngineError


def _error_classes() -> set[type]:
    """Every EngineError subclass defined anywhere in the engine package."""
    found: set[type] = set()
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        if ".bench" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, EngineError) and value.__module__ == info.name:
                found.add(value)
    return found


def test_every_engine_error_is_a_public_name():
    classes = _error_classes()
    assert len(classes) > 15  # errors.py and remote/errors.py, at least
    missing = sorted(c.__name__ for c in classes if getattr(engine, c.__name__, None) is not c)
    assert missing == []
    assert {c.__name__ for c in classes} <= set(engine.__all__)
