"""Server fixtures: a real uvicorn on 127.0.0.1 (a free port) over a float32 engine, stopped after.

`bundled_engine` is loaded once per test session (text matters there); most tests use the tiny
random-weight model, which loads in well under a second.
"""

from __future__ import annotations

from typing import Callable

import pytest

from engine import Engine, EngineConfig
from engine.server import BackgroundServer, EngineHost, ServerSettings

@pytest.fixture(scope="session")
def bundled_engine():
    engine = Engine.load("bundled:smollm2-135m-instruct",
                         EngineConfig(backend="torch", dtype="float32", max_context=2048, max_sessions=8))
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def tiny_engine(tiny_models):
    engine = Engine.load(str(tiny_models["llama"]),
                         EngineConfig(backend="torch", dtype="float32", max_context=256, max_sessions=12))
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def embedder():
    """The bundled embedding model (its weights load on the first request that needs them)."""
    from engine.embeddings import Embedder

    with Embedder() as e:
        yield e


@pytest.fixture
def serve() -> Callable[..., BackgroundServer]:
    """serve(engine_or_None, embedder=None, **ServerSettings fields) -> a started server; all stopped at teardown."""
    started: list[BackgroundServer] = []

    def start(engine, embedder=None, **settings) -> BackgroundServer:
        server = BackgroundServer(EngineHost(engine, embedder=embedder), ServerSettings(**settings), port=0).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        server.host.close()
