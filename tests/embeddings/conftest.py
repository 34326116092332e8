"""The bundled embedding model in float32 (the reference every other precision is held to), loaded
once for the tests that need its weights."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def embedder():
    from engine.embeddings import Embedder

    with Embedder(dtype="float32") as e:
        yield e
