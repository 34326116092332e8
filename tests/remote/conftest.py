"""Remote-engine fixtures: Confab's own `engine serve` in a subprocess on the bundled model (once
per test session), stopped after."""

from __future__ import annotations

import pytest

from tests.remote.serving import ServeProcess

BUNDLED = "bundled:smollm2-135m-instruct"


@pytest.fixture(scope="session")
def bundled_server():
    server = ServeProcess(BUNDLED).start()
    yield server
    server.stop()


@pytest.fixture
def spawn():
    """spawn(model, **options) -> a started ServeProcess; every one stopped at teardown."""
    started: list[ServeProcess] = []

    def start(model: str = BUNDLED, **options) -> ServeProcess:
        server = ServeProcess(model, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
