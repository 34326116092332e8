"""Serving on the local network from the app (issue 38, 12): the Server view's choice binds every
address with a key made for the user, the status bar says where and that it is the network, the
choice comes back after a restart, turning it off stops listening, and the network never opens
without a key. Tests bind 0.0.0.0 on a free port and connect through 127.0.0.1 only; the machine's
LAN address is a stand-in, so nothing here reaches beyond this computer."""

from __future__ import annotations

import os
import socket
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import httpx  # noqa: E402
import pytest  # noqa: E402
from PySide6.QtCore import QSettings, Qt  # noqa: E402

from app.models import lan, serve_fields  # noqa: E402
from app.models.lan import EVERY_NETWORK, LanAddress, serve_urls  # noqa: E402
from app.models.local_server import NEEDS_KEY  # noqa: E402
from app.models.ports import port_in_use  # noqa: E402
from app.settings.app_settings import AppSettings, load_settings, settings_path  # noqa: E402
from engine import EngineConfig  # noqa: E402

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=256)
TIMEOUT = 30_000
LAN = [LanAddress("192.168.1.5", "eth0"), LanAddress("10.0.0.7", "wlan0")]
"""The machine's network addresses as the app sees them (a stand-in: tests never use them)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


@pytest.fixture
def lan_here(monkeypatch):
    monkeypatch.setattr(lan, "lan_addresses", lambda: list(LAN))
    monkeypatch.setattr(serve_fields, "lan_addresses", lambda: list(LAN))


@pytest.fixture
def home(tmp_path):
    """A settings file written by an earlier run: the window's layout, a newer version's key and a
    port; what the Server view saves must keep all of it."""
    folder = tmp_path / "home"
    folder.mkdir()
    qs = QSettings(str(settings_path(folder)), QSettings.Format.IniFormat)
    qs.setValue("theme", "dark")
    qs.setValue("api_port", free_port())
    qs.setValue("a_newer_versions_option", "kept")
    qs.setValue("window/splitter", "kept too")
    qs.sync()
    return folder


def start_app(qapp, qtbot, home):
    from app.application import ConfabApp

    app = ConfabApp(qapp, home, CONFIG, use_tray=False)  # no model: the API answers 503, which is enough
    qtbot.addWidget(app.window)
    return app


def models(port: int, key: str = "", host: str = "") -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if host:
        headers["Host"] = host
    return httpx.get(f"http://127.0.0.1:{port}/v1/models", headers=headers, timeout=30)


def test_serving_on_the_network_from_the_server_view(qapp, qtbot, home, lan_here):
    confab = start_app(qapp, qtbot, home)
    port = confab.settings.api_port
    label = confab.local_server.label
    next(a for a in confab.window.model_menu.actions() if a.text() == "Serve on the local &network…").trigger()
    view = confab.serving.view
    assert view.isVisible() and not view.warning.isVisibleTo(view)
    view.scope.setCurrentIndex(view.scope.findData(EVERY_NETWORK))  # "The local network"
    key = view.key.key()
    assert key.startswith("confab-") and len(key) > 30, "the network needs a key: one is made"
    assert view.warning.isVisibleTo(view) and "can use the model" in view.warning.text()
    view.serving.setChecked(True)
    qtbot.waitUntil(lambda: confab.local_server.network_address != "", timeout=TIMEOUT)

    assert confab.local_server.listening_on == EVERY_NETWORK and port_in_use(port, EVERY_NETWORK)
    assert view.there.field.text() == f"http://192.168.1.5:{port}/v1" and view.there.isVisibleTo(view)
    assert view.here.field.text() == f"http://127.0.0.1:{port}/v1"
    assert label.text() == f"API on 192.168.1.5:{port} (network)" and label.isVisibleTo(confab.window)
    assert models(port).status_code == 401  # no key, no model
    assert models(port, "wrong").status_code == 401
    from_lan = models(port, key, host=f"192.168.1.5:{port}")  # as a client on the network addresses it
    assert from_lan.status_code == 503 and "no model is loaded" in from_lan.json()["error"]["message"]
    view.there.button.click()
    assert qapp.clipboard().text() == f"http://192.168.1.5:{port}/v1"
    qapp.clipboard().clear()

    saved = load_settings(home)
    assert (saved.api_server, saved.api_host, saved.api_key, saved.api_port) == (True, EVERY_NETWORK, key, port)
    qs = QSettings(str(settings_path(home)), QSettings.Format.IniFormat)
    assert (saved.theme, qs.value("a_newer_versions_option"), qs.value("window/splitter")) == ("dark", "kept", "kept too")

    confab.shutdown()  # quitting stops listening
    assert not port_in_use(port, EVERY_NETWORK)
    again = start_app(qapp, qtbot, home)  # the next start serves the network again, with the same key
    qtbot.waitUntil(lambda: again.local_server.network_address != "", timeout=TIMEOUT)
    assert again.local_server.label.text() == f"API on 192.168.1.5:{port} (network)"
    assert models(port, key).status_code == 503
    qtbot.mouseClick(again.local_server.label, Qt.MouseButton.LeftButton)  # the status bar opens the view
    view = again.serving.view
    assert view.isVisible() and view.scope.host() == EVERY_NETWORK and view.serving.isChecked()

    view.serving.setChecked(False)
    qtbot.waitUntil(lambda: again.local_server.address == "", timeout=TIMEOUT)
    assert not again.local_server.label.isVisibleTo(again.window)
    assert not port_in_use(port, EVERY_NETWORK), "off means nothing listens on any address"
    with pytest.raises(httpx.ConnectError):
        models(port, key)
    assert load_settings(home).api_server is False and load_settings(home).api_host == EVERY_NETWORK
    again.shutdown()


def test_the_network_never_opens_without_a_key(qapp, qtbot, home, lan_here):
    confab = start_app(qapp, qtbot, home)
    port = confab.settings.api_port
    confab.apply_settings(replace(confab.settings, api_server=True))  # this computer first, keyless
    qtbot.waitUntil(lambda: confab.local_server.address != "", timeout=TIMEOUT)
    label = confab.local_server.label
    assert label.text() == f"API on :{port}" and not confab.local_server.network_address
    assert models(port).status_code == 503  # keyless is fine on this computer

    with qtbot.waitSignal(confab.local_server.failed, timeout=TIMEOUT) as failed:
        confab.apply_settings(replace(confab.settings, api_host=EVERY_NETWORK, api_key=""))
    assert failed.args[0] == NEEDS_KEY and NEEDS_KEY in confab.window.notices.text
    assert label.text() == "API off" and NEEDS_KEY in label.toolTip()
    qtbot.waitUntil(lambda: not port_in_use(port, EVERY_NETWORK), timeout=TIMEOUT)  # the keyless one stopped too

    dialog = confab.settings_dialog()  # Settings shows it off, and choosing the network makes a key
    qtbot.addWidget(dialog)
    group = dialog.local_server
    assert not group.enabled.isChecked() and NEEDS_KEY in group.state.text()
    group.enabled.setChecked(True)
    group.scope.setCurrentIndex(group.scope.findData("10.0.0.7"))
    assert group.key_row.key().startswith("confab-") and group.warning.isVisibleTo(dialog)
    chosen = dialog.result_settings()
    assert (chosen.api_server, chosen.api_host, chosen.api_key) == (True, "10.0.0.7", group.key_row.key())
    confab.shutdown()


def test_an_address_this_computer_no_longer_has_is_said_in_words(qapp, qtbot, home, lan_here):
    confab = start_app(qapp, qtbot, home)
    with qtbot.waitSignal(confab.local_server.failed, timeout=TIMEOUT) as failed:  # bound, never reached
        confab.apply_settings(replace(confab.settings, api_server=True, api_host="203.0.113.9", api_key="k"))
    assert "no such address now" in failed.args[0] and confab.local_server.label.text() == "API off"
    confab.serving.show_view()
    scope = confab.serving.view.scope
    assert scope.host() == "203.0.113.9" and "not found now" in scope.currentText()
    confab.shutdown()


@pytest.mark.parametrize("host, expected", [
    ("127.0.0.1", ("http://127.0.0.1:8317/v1", "")),
    (EVERY_NETWORK, ("http://127.0.0.1:8317/v1", "http://192.168.1.5:8317/v1")),
    ("10.0.0.7", ("http://10.0.0.7:8317/v1", "http://10.0.0.7:8317/v1")),
])
def test_the_addresses_people_type(host, expected):
    assert serve_urls(host, 8317, LAN) == expected


def test_the_likeliest_lan_address_comes_first(monkeypatch):
    from types import SimpleNamespace

    def nic(*ips):
        return [SimpleNamespace(family=socket.AF_INET, address=ip) for ip in ips]

    monkeypatch.setattr(lan.psutil, "net_if_addrs", lambda: {
        "lo": nic("127.0.0.1"), "docker0": nic("172.17.0.1"), "eth1": nic("169.254.3.4", "10.0.0.7"),
        "wlan0": nic("192.168.1.5"), "down0": nic("192.168.9.9")})
    monkeypatch.setattr(lan.psutil, "net_if_stats", lambda: {
        name: SimpleNamespace(isup=name != "down0") for name in ("lo", "docker0", "eth1", "wlan0", "down0")})
    monkeypatch.setattr(lan, "_routed_address", lambda: "192.168.1.5")
    assert [a.ip for a in lan.lan_addresses()] == ["192.168.1.5", "10.0.0.7", "172.17.0.1"]


@pytest.mark.parametrize("raw, expected", [("0.0.0.0", "0.0.0.0"), (" 192.168.1.5 ", "192.168.1.5"),
                                           ("my-laptop.local", "127.0.0.1"), ("", "127.0.0.1")])
def test_the_choice_is_read_back_and_a_bad_one_is_this_computer(tmp_path, raw, expected):
    settings_path(tmp_path).write_text(f"[General]\napi_host={raw}\n")
    assert load_settings(tmp_path).api_host == expected == AppSettings(api_host=expected).api_host
