"""While a remote model is in use, the window says what is true: Load model does not show the
server's model as the local one "(loaded)" and never asks for a memory estimate of a server, and
the local API server says it is paused (it serves only a model loaded on this computer)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import DEFAULT_MODEL, remote_source  # noqa: E402

SERVER = "http://127.0.0.1:8799/v1"


def _picker(qtbot, current: str, loaded: str):
    from app.models.picker import ModelPickerDialog

    dialog = ModelPickerDialog(current, loaded_name=loaded)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: not dialog.status.text().startswith("Looking"), timeout=30_000)
    return dialog


def test_load_model_after_connect_tells_the_server_model_from_the_local_ones(qtbot):
    dialog = _picker(qtbot, remote_source(SERVER, DEFAULT_MODEL), DEFAULT_MODEL)
    names = [dialog.item(i).text(0) for i in range(dialog.count())]
    assert not [n for n in names if "(loaded)" in n], names  # nothing local is loaded
    assert dialog.loaded_row() is None
    assert dialog.chosen_source() == DEFAULT_MODEL, "a local model is offered first"
    (row,) = [i for i in range(dialog.count()) if dialog.source_at(i).startswith("server:")]
    assert dialog.item(row).text(0) == f"{DEFAULT_MODEL} (connected)"
    assert dialog.item(row).text(1) == "Server at 127.0.0.1:8799"
    for i in range(dialog.count()):  # choosing any entry never estimates a server as a file
        dialog.models.setCurrentItem(dialog.item(i))
        qtbot.waitUntil(lambda: dialog.estimate.text() != "Estimating memory…", timeout=60_000)
        assert "model not found" not in dialog.estimate.text(), dialog.estimate.text()
    dialog.models.setCurrentItem(dialog.item(row))
    assert "runs on the server at 127.0.0.1:8799" in dialog.estimate.text()
    assert not dialog.load_button.isEnabled()  # connected already; Connect to server… changes it


def test_a_local_model_is_still_marked_loaded(qtbot):
    dialog = _picker(qtbot, DEFAULT_MODEL, DEFAULT_MODEL)
    assert dialog.item(0).text(0) == f"{DEFAULT_MODEL} (loaded)" and dialog.loaded_row() == 0


def test_the_local_api_says_it_is_paused_while_a_remote_model_is_used(qtbot, qapp, tmp_path, bundled_server,
                                                                      monkeypatch):
    from dataclasses import replace

    import httpx

    from app.application import ConfabApp
    from engine import EngineConfig, RemoteEngine
    from tests.remote.serving import free_port
    from tests.remote.test_gui_remote_app import _accept_connect

    confab = ConfabApp(qapp, tmp_path / "home", EngineConfig(max_context=1024), use_tray=False)
    qtbot.addWidget(confab.window)
    try:
        confab.show_window()
        confab.load(DEFAULT_MODEL)
        qtbot.waitUntil(lambda: confab.window.state == "ready", timeout=120_000)
        port = free_port()
        confab.apply_settings(replace(confab.settings, api_server=True, api_port=port))
        qtbot.waitUntil(lambda: confab.local_server.address != "", timeout=60_000)
        api = confab.local_server.address
        label = confab.local_server.label
        assert label.text() == f"API on :{port}" and httpx.get(f"{api}/models", timeout=10).status_code == 200

        _accept_connect(monkeypatch, bundled_server.url, "", DEFAULT_MODEL)
        confab.window.connect_action.trigger()
        # `engine` is the server's as soon as it connects; the local API pauses once the store has it
        # too (attach_engine, on the store thread), a moment later on a busy machine
        qtbot.waitUntil(lambda: isinstance(confab.engine, RemoteEngine) and confab.window.state == "ready"
                        and label.text() == "API paused", timeout=120_000)
        assert not label.isHidden()
        assert bundled_server.url in label.toolTip() and api in label.toolTip()
        answer = httpx.get(f"{api}/models", timeout=10)
        assert answer.status_code == 503 and "another server" in answer.text and "paused" in answer.text

        confab.load(DEFAULT_MODEL)  # back to a model on this computer: the API answers again
        qtbot.waitUntil(lambda: not isinstance(confab.engine, RemoteEngine) and confab.window.state == "ready"
                        and label.text() == f"API on :{port}", timeout=120_000)
        assert httpx.get(f"{api}/models", timeout=10).status_code == 200
    finally:
        confab.shutdown()
