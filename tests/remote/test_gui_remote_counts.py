"""The app counts attached files with the loaded engine's tokenizer, and falls back to the estimate
(shown with "~") once it is connected to a remote server, which cannot count."""

from __future__ import annotations

from app.chat.context_meter import estimate_tokens
from engine import DEFAULT_MODEL, RemoteEngine
from tests.remote.test_gui_remote_app import TIMEOUT, _accept_connect, start_app  # noqa: F401 (fixture)

CODE = "".join(f"def f{i}(a, b):\n    return a * {i} + b\n" for i in range(20))


def _chip(qtbot, confab, path):
    tray = confab.window.chat.files.tray
    tray.clear()
    tray.add_paths([path])
    qtbot.waitUntil(lambda: tray.drafts and tray.drafts[0].chip.state == "ready", timeout=TIMEOUT)
    return tray.drafts[0].chip


def test_local_counts_exactly_and_remote_shows_the_estimate(qtbot, start_app, bundled_server, monkeypatch,
                                                            tmp_path):
    path = tmp_path / "code.py"
    path.write_text(CODE)
    confab = start_app()  # the bundled model, in process
    assert confab.quick_chat.files.count_tokens is not None
    exact = confab.engine.count_tokens(CODE)
    assert _chip(qtbot, confab, path).label.text().endswith(f"· {exact:,} tokens")
    _accept_connect(monkeypatch, bundled_server.url, "", DEFAULT_MODEL)
    confab.window.connect_action.trigger()
    qtbot.waitUntil(lambda: isinstance(confab.engine, RemoteEngine) and confab.window.state == "ready",
                    timeout=TIMEOUT)
    # _ready hands the new engine's counter (none) to the window and the quick chat
    qtbot.waitUntil(lambda: confab.quick_chat.files.count_tokens is None, timeout=TIMEOUT)
    assert confab.window.chat.files.tray.count_tokens is None
    assert _chip(qtbot, confab, path).label.text().endswith(f"· ~{estimate_tokens(CODE):,} tokens")
