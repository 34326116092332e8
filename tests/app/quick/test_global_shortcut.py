"""The global quick chat shortcut: parsing, failing soft with a reason where the platform does not
allow it, the Settings row, and (where an X server can be started) a real grab on X11."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import replace

import pytest

X = pytest.importorskip("Xlib.X", reason="python-xlib is installed on Linux only (X11 grabs)")

from app.quick.global_shortcut import (DEFAULT_SHORTCUT, GlobalShortcut, ShortcutError,  # noqa: E402
                                 _X11Grab, parse_shortcut, unavailable_reason)
from app.settings.app_settings import AppSettings, load_settings, save_settings  # noqa: E402
from app.settings.dialog import SettingsDialog  # noqa: E402


@pytest.mark.parametrize("text, expected", [
    ("Ctrl+Alt+Space", (X.ControlMask | X.Mod1Mask, "space")),
    ("Meta+K", (X.Mod4Mask, "k")),
    ("Ctrl+Shift+F5", (X.ControlMask | X.ShiftMask, "F5")),
])
def test_parse(text, expected):
    assert parse_shortcut(text) == expected


@pytest.mark.parametrize("text, message", [
    ("A", "needs Ctrl, Alt or Meta"),
    ("Shift+A", "needs Ctrl, Alt or Meta"),
    ("", "is not one key combination"),
    ("Ctrl+A, Ctrl+B", "is not one key combination"),
])
def test_parse_refuses(text, message):
    with pytest.raises(ShortcutError, match=message):
        parse_shortcut(text)


@pytest.mark.parametrize("platform, env, words", [
    ("wayland", {"WAYLAND_DISPLAY": "wayland-0"}, "Wayland does not let programs set global shortcuts"),
    ("xcb", {"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, "Wayland does not let"),  # XWayland
    ("xcb", {"DISPLAY": ":0", "XDG_SESSION_TYPE": "wayland"}, "Wayland does not let"),
    ("offscreen", {"DISPLAY": ":0"}, "No desktop"),
    ("xcb", {}, "No X11 display"),
])
def test_platforms_without_a_global_shortcut_say_why(platform, env, words):
    assert words in unavailable_reason(platform, env)


def test_xcb_with_a_display_may_try():
    assert unavailable_reason("xcb", {"DISPLAY": ":1", "XDG_SESSION_TYPE": "x11"}) is None


def test_setting_it_where_it_cannot_work_fails_soft(qapp):
    shortcut = GlobalShortcut()
    assert not shortcut.set_shortcut("Ctrl+Alt+Space")  # the tests run offscreen
    assert not shortcut.active and "No desktop" in shortcut.status
    assert shortcut.set_shortcut("") and shortcut.status == "No global shortcut is set."


def test_settings_show_why_and_keep_the_shortcut(qtbot, tmp_path):
    settings = AppSettings()
    assert settings.quick_chat_shortcut == DEFAULT_SHORTCUT
    dialog = SettingsDialog(settings, tmp_path, False, shortcut_status="Wayland does not let programs …")
    qtbot.addWidget(dialog)
    assert dialog.shortcut_status.text() == "Wayland does not let programs …"
    dialog.shortcut.setKeySequence("Ctrl+Alt+K")
    edited = dialog.result_settings()
    assert edited.quick_chat_shortcut == "Ctrl+Alt+K"
    save_settings(tmp_path, replace(edited))
    assert load_settings(tmp_path).quick_chat_shortcut == "Ctrl+Alt+K"


@pytest.fixture
def x_server(monkeypatch):
    """A private Xvfb display (the test is skipped where Xvfb is not installed)."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb)")
    read, write = os.pipe()
    # -noreset: by default Xvfb resets when its last client leaves, refusing connections meanwhile.
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-noreset", "-nolisten", "tcp",
                               "-screen", "0", "320x240x24"],
                              pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()
    monkeypatch.setenv("DISPLAY", f":{number}")
    yield f":{number}"
    server.terminate()
    server.wait(timeout=10)


def test_x11_grab_receives_only_its_keys_and_refuses_a_taken_one(x_server):
    from Xlib import XK, display
    from Xlib.ext import xtest

    pressed = threading.Event()
    grab = _X11Grab(*parse_shortcut("Ctrl+Alt+Space"), pressed.set)
    try:
        with pytest.raises(ShortcutError, match="Another program already uses this shortcut"):
            _X11Grab(*parse_shortcut("Ctrl+Alt+Space"), lambda: None)
        typist = display.Display(x_server)
        keys = [typist.keysym_to_keycode(XK.string_to_keysym(k)) for k in ("Control_L", "Alt_L", "space")]
        for code in keys:
            xtest.fake_input(typist, X.KeyPress, code)
        for code in reversed(keys):
            xtest.fake_input(typist, X.KeyRelease, code)
        typist.sync()
        assert pressed.wait(timeout=10)
        typist.close()
    finally:
        grab.stop()
    again = _X11Grab(*parse_shortcut("Ctrl+Alt+Space"), lambda: None)  # released by stop()
    again.stop()


def test_a_press_reaches_the_gui_thread_as_activated(qtbot, x_server, monkeypatch):
    import app.quick.global_shortcut as module
    from Xlib import XK, display
    from Xlib.ext import xtest

    monkeypatch.setattr(module, "unavailable_reason", lambda *_: None)  # Qt itself runs offscreen here
    shortcut = GlobalShortcut()
    try:
        assert shortcut.set_shortcut("Ctrl+Alt+K") and shortcut.active
        assert shortcut.status == "Ctrl+Alt+K opens the quick chat from any program."
        typist = display.Display(x_server)
        keys = [typist.keysym_to_keycode(XK.string_to_keysym(k)) for k in ("Control_L", "Alt_L", "k")]
        with qtbot.waitSignal(shortcut.activated, timeout=10_000):
            for code in keys:
                xtest.fake_input(typist, X.KeyPress, code)
            for code in reversed(keys):
                xtest.fake_input(typist, X.KeyRelease, code)
            typist.sync()
        typist.close()
    finally:
        shortcut.stop()
    assert not shortcut.active
