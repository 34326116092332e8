"""Engine fixtures for the conversations tests, imported explicitly (not a conftest, so the store
tests never load an engine):

    from tests.app.engine_fixtures import make_engine, reply_ids  # noqa: F401 (fixture)
"""

from __future__ import annotations

from typing import Callable, Iterable

import pytest

from engine import Chunk, Engine, EngineConfig, SamplingParams

GREEDY = SamplingParams(temperature=0, max_tokens=12, ignore_stop=True)
"""Fixed-length greedy replies: random-weight models would otherwise stop at arbitrary points."""


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


def reply_ids(chunks: Iterable[Chunk]) -> tuple[list[int], Chunk]:
    """All token ids of a streamed reply, and its last chunk (with the stats)."""
    ids: list[int] = []
    last = None
    for chunk in chunks:
        ids.extend(chunk.token_ids)
        last = chunk
    return ids, last
