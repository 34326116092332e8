"""Model ▸ Local API server…: the switch turns the API on and off through the settings (saved, as
Settings ▸ Local API server does), and each request appears as it ends with its status, tokens and,
for a refusal, the reason the client was given."""

from __future__ import annotations

import os
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import httpx  # noqa: E402

from app.settings.app_settings import load_settings  # noqa: E402
from tests.app.models.test_gui_local_server import TIMEOUT, confab, free_port  # noqa: E402,F401 (fixture)


def _menu_action(window, text: str):
    return next(a for a in window.model_menu.actions() if a.text().replace("&", "") == text)


def test_the_server_view_switches_the_api_and_lists_requests(qtbot, confab, tmp_path):
    confab.settings = replace(confab.settings, api_port=free_port())
    _menu_action(confab.window, "Local API server…").trigger()
    view = confab.serving.view
    assert view.isVisible() and not view.serving.isChecked() and view.state.text().startswith("Off.")
    view.serving.setChecked(True)
    qtbot.waitUntil(lambda: confab.local_server.address != "", timeout=TIMEOUT)
    url = confab.local_server.address
    assert load_settings(tmp_path / "home").api_server, "the switch is saved with the settings"
    assert view.state.text() == "Serving this computer only." and view.here.field.text() == url
    assert not view.there.isVisibleTo(view)

    reply = httpx.post(f"{url}/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "temperature": 0})
    assert reply.status_code == 200
    qtbot.waitUntil(lambda: view.table.rowCount() == 1, timeout=TIMEOUT)
    cells = [view.table.item(0, c).text() for c in range(view.table.columnCount())]
    usage = reply.json()["usage"]
    assert cells[1:5] == ["POST /v1/chat/completions", cells[2], "200",
                          f"{usage['prompt_tokens']} → {usage['completion_tokens']}"]
    assert cells[2].startswith("127.0.0.1:")

    assert httpx.post(f"{url}/chat/completions", timeout=60, json={"model": "gpt-x", "messages": []}).status_code >= 400
    qtbot.waitUntil(lambda: view.table.rowCount() == 2, timeout=TIMEOUT)
    view.table.setCurrentCell(1, 0)
    assert view.detail.text().startswith(view.table.item(1, 3).text() + ": ") and len(view.detail.text()) > 8
    assert view.table.item(1, 1).toolTip().endswith("\n" + view.detail.text().split(": ", 1)[1])
    view.resize(520, 360)  # narrow: the client's column gives way, its address stays in the tooltip
    assert view.table.isColumnHidden(2) and cells[2] in view.table.item(0, 1).toolTip()

    view.clear()
    assert view.table.rowCount() == 0 and confab.local_server.requests.entries() == []
    view.serving.setChecked(False)
    qtbot.waitUntil(lambda: confab.local_server.address == "", timeout=TIMEOUT)
    assert not load_settings(tmp_path / "home").api_server and view.state.text().startswith("Off.")
