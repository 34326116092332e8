"""The bundled embedding model, loaded once for the tests that need its weights."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def embedder():
    from engine.embeddings import Embedder

    with Embedder() as e:
        yield e
