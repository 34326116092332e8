"""Fixtures for the GUI tests (offscreen Qt, tiny model), imported explicitly:

    from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.bridge import Bridge  # noqa: E402
from engine import Engine, EngineConfig, SamplingParams  # noqa: E402

GREEDY = SamplingParams(temperature=0, max_tokens=12, ignore_stop=True)
"""Short fixed-length greedy replies."""
LONG = SamplingParams(temperature=0, max_tokens=900, ignore_stop=True)
"""Replies long enough to stop, or to overlap with another, before they end (the tiny model wrote
400 tokens before a busy GUI thread got to stop it, beside another test worker); every test that
uses it stops its replies, so the length costs no time."""


def pace(monkeypatch, engine: Engine, seconds: float = 0.02) -> None:
    """Make each model call of `engine` take `seconds` longer, for this test: a LONG reply then lasts
    seconds (400 calls), not the second or so the tiny model takes, so it is still streaming when the
    test, slowed by a busy machine (another test worker beside it), gets to stop it."""
    import time

    backend = engine._worker.backend
    for name in ("forward", "forward_batch", "step"):
        real = getattr(backend, name, None)
        if real is not None:
            monkeypatch.setattr(backend, name, lambda *a, real=real, **k: (time.sleep(seconds), real(*a, **k))[1])


@pytest.fixture(scope="module")
def gui_engine(tiny_models) -> Engine:
    """The tiny llama on torch in float32, shared by a test module."""
    engine = Engine.load(str(tiny_models["llama"]), EngineConfig(backend="torch", dtype="float32", max_context=1024))
    yield engine
    engine.close()


@pytest.fixture
def bridge(qapp, gui_engine, tmp_path, monkeypatch) -> Bridge:
    """A Bridge on an empty CONFAB_HOME with the engine attached; closed at teardown."""
    monkeypatch.setenv("CONFAB_HOME", str(tmp_path / "home"))
    b = Bridge(params=GREEDY)
    b.attach_engine(gui_engine)
    yield b
    b.close()


@pytest.fixture
def window(qtbot, bridge):
    """The main window, ready to send."""
    from app.window.main_window import MainWindow

    w = MainWindow(bridge)
    qtbot.addWidget(w)
    w.show()
    w.set_state("ready", "ready")
    return w


def accepting_settings_dialog(settings):
    """A stand-in for SettingsDialog (patch it into app.application) that is accepted with `settings`."""

    class Accepting:
        def __init__(self, *args):
            from types import SimpleNamespace

            self.local_server = SimpleNamespace(show_state=lambda *state, **more: None)  # the API box's live state

        def exec(self):
            from PySide6.QtWidgets import QDialog

            return QDialog.DialogCode.Accepted

        def result_settings(self):
            return settings

    return Accepting
