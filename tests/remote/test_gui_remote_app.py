"""The whole app on a remote engine: Model ▸ Connect to server…, replies from the server with the
engine and model shown, the choice remembered across a restart, and a server that is gone at the
next start said in the status bar while the local model takes over."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QDialog  # noqa: E402

from engine import DEFAULT_MODEL, EngineConfig, RemoteEngine, SamplingParams, remote_source  # noqa: E402
from tests.remote.serving import free_port  # noqa: E402

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=1024)
SHORT = SamplingParams(temperature=0, max_tokens=8)
TIMEOUT = 120_000


@pytest.fixture
def start_app(qapp, qtbot, tmp_path):
    """start_app() -> a ConfabApp on tmp_path/home, started as `python -m app` does (the remembered
    model, falling back to the bundled one); shut down at teardown."""
    from app.application import ConfabApp

    apps = []

    def start():
        confab = ConfabApp(qapp, tmp_path / "home", CONFIG, use_tray=False)
        apps.append(confab)
        qtbot.addWidget(confab.window)
        confab.show_window()
        confab.load(confab.settings.last_model or DEFAULT_MODEL, fall_back=True)
        qtbot.waitUntil(lambda: confab.window.state == "ready", timeout=TIMEOUT)
        confab.bridge.params = SHORT
        return confab

    yield start
    for confab in apps:
        confab.shutdown()


def send(qtbot, confab, text):
    window = confab.window
    with qtbot.waitSignal(window.chat.reply_finished, timeout=TIMEOUT) as finished:
        qtbot.keyClicks(window.composer, text)
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    return finished.args[0]


def _accept_connect(monkeypatch, url: str, key: str, model: str) -> None:
    import app.application as application

    class Accepting:
        def __init__(self, *args, **kwargs):
            pass

        def exec(self):
            return QDialog.DialogCode.Accepted

        def chosen(self):
            return url, key, model

    monkeypatch.setattr(application, "ConnectDialog", Accepting)


def test_connect_reply_restart_and_reconnect(qtbot, start_app, bundled_server, monkeypatch):
    confab = start_app()  # the bundled model, in process
    _accept_connect(monkeypatch, bundled_server.url, "", DEFAULT_MODEL)
    confab.window.connect_action.trigger()
    # the window stays "ready" on the local model while it connects, and `engine` is the remote one a
    # moment before the window shows it: wait for what the user sees (it raced under load)
    qtbot.waitUntil(lambda: isinstance(confab.engine, RemoteEngine) and confab.window.state == "ready"
                    and confab.window.backend_label.text().startswith("Remote server"), timeout=TIMEOUT)
    assert confab.window.backend_label.text() == f"Remote server at 127.0.0.1:{bundled_server.port}"
    finished = send(qtbot, confab, "What is the capital of France?")
    assert finished.text.strip() and finished.stats.generated_tokens >= 1
    cid = finished.conversation_id
    confab.window.close()
    confab.shutdown()

    again = start_app()  # reconnects to the remembered server
    assert isinstance(again.engine, RemoteEngine)
    assert again.settings.last_model == remote_source(bundled_server.url, DEFAULT_MODEL)
    again.window.show_conversation(cid)
    qtbot.waitUntil(lambda: "capital of France" in again.window.chat_view.plain_text(), timeout=TIMEOUT)
    assert send(qtbot, again, "And of Italy?").text.strip()
    seen: list = []
    again.bridge.run(lambda store: [(m.role, m.model) for m in store.messages(cid)]).success(seen.append)
    qtbot.waitUntil(lambda: bool(seen), timeout=TIMEOUT)
    assert [role for role, _ in seen[0]] == ["user", "assistant", "user", "assistant"]
    assert seen[0][-1][1] == again.engine.label  # each reply records which engine and model wrote it


def test_a_remembered_server_that_is_gone_says_so_and_the_local_model_takes_over(qtbot, start_app, tmp_path,
                                                                                 monkeypatch):
    from app.settings.app_settings import AppSettings, save_settings

    gone = f"http://127.0.0.1:{free_port()}/v1"
    save_settings(tmp_path / "home", AppSettings(last_model=remote_source(gone, "big-model")))
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr("app.window.main_window.MainWindow.show_load_error",
                        lambda self, title, message: shown.append((title, message)))
    confab = start_app()
    assert confab.source == DEFAULT_MODEL and not isinstance(confab.engine, RemoteEngine)
    title, message = shown[0]
    assert title.startswith(f"Could not connect to {gone}") and "Connect to server" in title
    assert message.startswith("connection refused")
