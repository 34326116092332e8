"""`python -m app.devtools.screenshots_server [OUT]`: a picture of the Server view serving the local
network, with a few requests in its log (server.png in OUT, default `docs/`).

Run under a virtual display like `app.devtools.screenshots` (docs/screenshots.sh runs it). The API
listens on every address of this computer, on a free port and behind a new key, for the moments the
picture takes; the requests come from this script through 127.0.0.1. The LAN address the picture
shows is a stand-in (192.168.1.5), so no one's own address ends up in the README.
"""

from __future__ import annotations

import socket
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

STAND_IN = "192.168.1.5"


def free_port() -> int:
    """The app's own port (8317) when it is free, as a user sees it; else any free one."""
    from app.models.ports import port_in_use
    from app.settings.app_settings import AppSettings

    if not port_in_use(AppSettings().api_port, "0.0.0.0"):
        return AppSettings().api_port
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def send_requests(url: str, key: str, model: str) -> None:
    """What the log shows: a chat reply, a model list, a wrong key and an unknown model's name."""
    import httpx

    good = {"Authorization": f"Bearer {key}"}
    httpx.post(f"{url}/chat/completions", headers=good, timeout=120, json={
        "model": model, "messages": [{"role": "user", "content": "Say hello in French."}], "max_tokens": 12,
        "temperature": 0})
    httpx.get(f"{url}/models", headers=good, timeout=30)
    httpx.get(f"{url}/models", headers={"Authorization": "Bearer an-old-key"}, timeout=30)
    httpx.post(f"{url}/chat/completions", headers=good, timeout=30, json={
        "model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]})


def main(argv: list[str]) -> int:
    from app.devtools.screenshots import make_sample_folder, save_picture, settle, start_window
    from app.devtools.self_test import wait_until
    from app.models import lan, serve_fields
    from app.models.lan import EVERY_NETWORK, LanAddress

    stand_in = [LanAddress(STAND_IN, "eth0")]
    lan.lan_addresses = serve_fields.lan_addresses = lambda: list(stand_in)
    out = Path(argv[0] if argv else "docs")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-"))
    make_sample_folder(home)
    qapp, confab = start_window(home)
    confab.save_changed_settings(replace(confab.settings, api_port=free_port()))
    confab.serving.show_view()
    view = confab.serving.view
    view.scope.setCurrentIndex(view.scope.findData(EVERY_NETWORK))  # a key is made, as for a user
    view.serving.setChecked(True)
    server = confab.local_server
    wait_until(qapp, lambda: bool(server.network_address), 60, "the local API on the network")
    send_requests(server.address, view.key.key(), confab.engine.source)
    wait_until(qapp, lambda: view.table.rowCount() == 4, 60, "the requests in the log")
    view.table.setCurrentCell(3, 0)  # the refused request: its reason below the table
    view.table.clearFocus()
    settle(qapp, 1.0)
    save_picture(view, out / "server.png")
    view.serving.setChecked(False)
    wait_until(qapp, lambda: not server.address, 60, "the local API to stop")
    view.close()
    confab.window.close()
    confab.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
