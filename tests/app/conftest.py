"""Fixtures for the store tests: a fake clock, an in-memory store, and a CONFAB_HOME folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.store import open_memory_store


class FakeClock:
    """Wall clock for tests: starts at a fixed time and moves one second per reading."""

    def __init__(self, start: float = 1_800_000_000.0, step: float = 1.0):
        self.now, self.step = start, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path, clock):
    """A migrated in-memory store whose state files go to tmp_path/states."""
    s = open_memory_store(tmp_path / "states", clock=clock)
    yield s
    s.close()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty data folder, also set as CONFAB_HOME."""
    folder = tmp_path / "home"
    monkeypatch.setenv("CONFAB_HOME", str(folder))
    return folder


def pytest_sessionfinish(session, exitstatus):
    """Empty the clipboard before the interpreter exits: Qt's offscreen clipboard crashed the test
    process at exit (signal 11, after every test passed) while it still held what a copy put there."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is not None:
        app.clipboard().clear()
        app.processEvents()
