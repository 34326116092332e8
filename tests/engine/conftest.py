"""Engine fixtures: an engine factory that closes what it opened, and greedy helpers."""

from __future__ import annotations

from typing import Callable

import pytest

from engine import Engine, EngineConfig



@pytest.fixture
def make_engine() -> Callable[..., Engine]:
    """make_engine(source, backend, **config) -> Engine in float32; all closed at teardown."""
    opened: list[Engine] = []

    def make(source, backend: str, **config) -> Engine:
        config.setdefault("dtype", "float32")
        config.setdefault("max_context", 1024)
        engine = Engine.load(str(source), EngineConfig(backend=backend, **config))
        opened.append(engine)
        return engine

    yield make
    for engine in opened:
        engine.close()


@pytest.fixture
def tiny_engine(make_engine, tiny_models, backend) -> Engine:
    return make_engine(tiny_models["llama"], backend)
