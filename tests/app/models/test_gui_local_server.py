"""Settings ▸ "Local API server": the switch starts and stops the server around the app's own
engine, the status bar shows the address, and a model load answers 503 until it is ready."""

from __future__ import annotations

import os
import socket
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import httpx  # noqa: E402
import pytest  # noqa: E402

from app.settings.app_settings import AppSettings  # noqa: E402
from app.settings.dialog import SettingsDialog  # noqa: E402
from engine import EngineConfig  # noqa: E402

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=256)
TIMEOUT = 60_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_settings_group_edits_the_server_fields(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    group = dialog.local_server
    assert not group.enabled.isChecked() and not group.port.isEnabled()  # off by default
    group.enabled.setChecked(True)
    group.port.setValue(9123)
    group.key.setText(" secret ")
    result = dialog.result_settings()
    assert (result.api_server, result.api_port, result.api_key) == (True, 9123, "secret")


@pytest.fixture
def confab(qapp, qtbot, tiny_models, tmp_path):
    from app.application import ConfabApp

    app = ConfabApp(qapp, tmp_path / "home", CONFIG, use_tray=False)
    qtbot.addWidget(app.window)
    app.load(str(tiny_models["llama"]))
    qtbot.waitUntil(lambda: app.window.state == "ready", timeout=TIMEOUT)
    yield app
    app.shutdown()


def test_the_switch_starts_and_stops_the_server_on_the_apps_engine(qtbot, confab, tiny_models):
    port = free_port()
    assert confab.local_server.address == "" and not confab.local_server.label.isVisible()
    confab.apply_settings(replace(confab.settings, api_server=True, api_port=port, api_key="k"))
    qtbot.waitUntil(lambda: confab.local_server.address != "", timeout=TIMEOUT)
    url = f"http://127.0.0.1:{port}/v1"
    assert confab.local_server.address == url and confab.local_server.label.text() == f"API on :{port}"
    headers = {"Authorization": "Bearer k"}
    assert confab.local_server.host.engine is confab.engine  # one copy of the weights: the app's engine
    models = httpx.get(f"{url}/models", headers=headers, timeout=60).json()
    assert models["data"][0]["id"] == str(tiny_models["llama"])  # the chat model first
    assert [m.get("type") for m in models["data"][1:]] == ["embedding"]  # then the library's embedding model
    reply = httpx.post(f"{url}/chat/completions", headers=headers, timeout=60, json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "temperature": 0})
    assert reply.status_code == 200
    vectors = httpx.post(f"{url}/embeddings", headers=headers, timeout=120, json={"input": ["a cat", "a dog"]})
    assert vectors.status_code == 200 and len(vectors.json()["data"]) == 2
    assert confab.local_server.host.embedder is confab.library.embedder.get()  # one copy: the library's

    confab.local_server.loading("another model")  # what a model switch does first
    during = httpx.get(f"{url}/models", headers=headers, timeout=60)
    assert during.status_code == 503 and "loading another model" in during.json()["error"]["message"]
    confab.local_server.set_engine(confab.engine)
    assert httpx.get(f"{url}/models", headers=headers, timeout=60).status_code == 200

    confab.apply_settings(replace(confab.settings, api_server=False))
    qtbot.waitUntil(lambda: confab.local_server.address == "", timeout=TIMEOUT)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models", timeout=5)


def test_a_port_in_use_is_reported_not_fatal(qtbot, confab):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with qtbot.waitSignal(confab.local_server.failed, timeout=TIMEOUT) as failed:
            confab.apply_settings(replace(confab.settings, api_server=True, api_port=port))
    assert str(port) in failed.args[0]
    assert confab.local_server.address == ""
    assert str(port) in confab.window.statusBar().currentMessage()


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_a_busy_port_is_said_in_words_shown_off_and_another_offered(qtbot, confab):
    """A new user's report: the notice read "…could not start on 127.0.0.1:8317: 3.", Settings kept
    the box ticked and nothing showed the API was off."""
    with socket.socket() as taken:  # another program holds the port
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with qtbot.waitSignal(confab.local_server.failed, timeout=TIMEOUT) as failed:
            confab.apply_settings(replace(confab.settings, api_server=True, api_port=port))
        message = failed.args[0]
        assert f"Port {port} is in use by another program" in message and ": 3" not in message
        offered = int(message.split("Port ")[2].split(" is free")[0])  # "… Port 8318 is free: …"
        assert offered != port and port_is_free(offered)
        assert f"Port {port} is in use by another program" in confab.window.notices.text
        label = confab.local_server.label
        assert label.isVisibleTo(confab.window) and label.text().startswith("API off")
        assert f"Port {port} is in use" in label.toolTip()

        dialog = confab.settings_dialog()  # what Settings… opens
        qtbot.addWidget(dialog)
        group = dialog.local_server
        assert not group.enabled.isChecked()  # the true state: off
        assert group.state.isVisibleTo(dialog) and f"Port {port} is in use" in group.state.text()
        assert group.use_free.isVisibleTo(dialog) and group.use_free.text() == f"Use port {offered}"
        group.use_free.click()
        assert group.enabled.isChecked() and group.port.value() == offered
        confab.apply_settings(dialog.result_settings())
    qtbot.waitUntil(lambda: confab.local_server.address == f"http://127.0.0.1:{offered}/v1", timeout=TIMEOUT)
    assert label.text() == f"API on :{offered}" and f"http://127.0.0.1:{offered}/v1" in label.toolTip()
    again = confab.settings_dialog()
    qtbot.addWidget(again)
    assert again.local_server.enabled.isChecked() and not again.local_server.use_free.isVisibleTo(again)
    confab.apply_settings(replace(confab.settings, api_server=False))
    qtbot.waitUntil(lambda: confab.local_server.address == "", timeout=TIMEOUT)
    assert not label.isVisibleTo(confab.window)
