"""Quitting while replies are still being written asks once, with a setting to stop asking."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from app.window.quit_confirm import kept_note, quit_question  # noqa: E402
from app.settings.app_settings import load_settings  # noqa: E402
from engine import EngineConfig, SamplingParams  # noqa: E402

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=1024)
ENDLESS = SamplingParams(temperature=0, max_tokens=900, ignore_stop=True)
TIMEOUT = 60_000


@pytest.fixture
def confab(qapp, qtbot, tiny_models, tmp_path, monkeypatch):
    """A ConfabApp with the tiny llama and one reply streaming; `asked` records each question."""
    from app import application

    app = application.ConfabApp(qapp, tmp_path / "home", CONFIG, use_tray=False)
    qtbot.addWidget(app.window)
    app.show_window()
    app.load(str(tiny_models["llama"]))
    qtbot.waitUntil(lambda: app.window.state == "ready", timeout=TIMEOUT)
    app.bridge.params = ENDLESS
    quits = []
    monkeypatch.setattr(app.qapp, "quit", lambda: quits.append(True))
    app.quits = quits
    yield app
    app.shutdown()


def start_reply(qtbot, confab):
    qtbot.keyClicks(confab.window.composer, "Keep going")
    qtbot.keyClick(confab.window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: bool(confab.bridge.replying()), timeout=TIMEOUT)


def answer(monkeypatch, go, stop_asking):
    from app import application

    asked = []
    monkeypatch.setattr(application, "ask_quit", lambda parent, n: asked.append(n) or (go, stop_asking))
    return asked


def test_the_question_counts_the_replies():
    assert quit_question(2) == "2 replies are still being written — quit anyway?"
    assert quit_question(1) == "A reply is still being written — quit anyway?"
    # the line under it agrees in number too (it said "What they said" of one reply)
    assert kept_note(1) == "What it said so far is kept, marked as interrupted."
    assert kept_note(3) == "What they said so far is kept, marked as interrupted."


def test_quit_with_nothing_running_asks_nothing(confab, monkeypatch):
    asked = answer(monkeypatch, False, False)
    confab.quit()
    assert asked == [] and confab.quits == [True]


def test_cancel_keeps_the_app_and_the_reply_running(qtbot, confab, monkeypatch):
    start_reply(qtbot, confab)
    asked = answer(monkeypatch, False, False)
    confab.quit()
    assert asked == [1] and confab.quits == [] and confab.bridge.replying()
    confab.window.close()  # closing the window for real asks too
    assert asked == [1, 1] and confab.window.isVisible()
    confab.bridge.stop(confab.window.current_id)


def test_quit_asks_once_and_stop_asking_is_remembered(qtbot, confab, monkeypatch):
    start_reply(qtbot, confab)
    asked = answer(monkeypatch, True, True)
    confab.window.close()  # the window closes, then the app quits: one question
    confab.quit()
    assert asked == [1] and confab.quits == [True]
    assert load_settings(confab.home).confirm_quit is False
    confab._quit_confirmed = False
    confab.quit()  # turned off: no question any more
    assert asked == [1]
