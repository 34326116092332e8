"""Offline, or with the Hub's address unreachable, Get models' search and repo listing fail at once
with one plain reason: no rounds of retries, and no word of a download to resume when nothing was
downloading."""

from __future__ import annotations

import socket

import pytest

from engine.errors import NetworkError
from engine.models import hub


@pytest.fixture
def unreachable(monkeypatch):
    """HF_ENDPOINT at a loopback port nothing listens on; the Hub library must never be asked."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    for var in hub._PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(hub, "_api", lambda: pytest.fail("asked the Hub library, which retries for ~25 s"))


@pytest.mark.parametrize("call", [lambda: hub.search("qwen"), lambda: hub.repo_options("org/model")])
def test_an_unreachable_hub_fails_at_once_with_the_reason(unreachable, call):
    with pytest.raises(NetworkError) as failed:
        call()
    message = str(failed.value)
    assert "cannot be reached" in message and "Hugging Face" in message
    assert "resume" not in message


def test_a_search_that_fails_on_the_network_does_not_speak_of_a_download(monkeypatch):
    from engine.models.hub_download import translate_http_error

    error = ConnectionError("[Errno -2] Name or service not known")
    assert "resumes" not in str(translate_http_error(error, "search 'qwen'", resumable=False))
    assert "resumes where it stopped" in str(translate_http_error(error, "org/x"))


def test_get_models_says_one_plain_line_when_the_hub_cannot_be_reached(qtbot, unreachable):
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.models.get_models_dialog import GetModelsDialog

    dialog = GetModelsDialog()
    qtbot.addWidget(dialog)
    dialog.query.setText("qwen")
    dialog.search()
    qtbot.waitUntil(lambda: dialog.search_button.isEnabled(), timeout=10_000)
    line = dialog.status.text()
    assert line == "Search failed. Could not reach Hugging Face: check that this computer is online, then try again."
    assert "resume" not in line and "Error" not in line
    assert "NetworkError" in dialog.status.toolTip()  # the raw error, for whoever asks
