"""What the conversations tests share: a store in memory whose saved states go under the test's folder."""

from __future__ import annotations

import pytest

from app.store import open_memory_store


@pytest.fixture
def store(tmp_path):
    s = open_memory_store(tmp_path / "states")
    yield s
    s.close()
