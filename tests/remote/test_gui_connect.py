"""Model ▸ Connect to server…: the Test button lists a real server's models, or says why it cannot in
words (refused, DNS, 401, timeout, not an OpenAI API), with the exact error behind "Details"; the
dialog grows to fit the answer and its fields keep their size."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.models.connect_dialog import ConnectDialog  # noqa: E402
from engine import Engine, EngineConfig  # noqa: E402
from engine.server import BackgroundServer, EngineHost, ServerSettings  # noqa: E402
from tests.remote.serving import free_port  # noqa: E402
from tests.remote.stubs import http_stub, silent_socket  # noqa: E402


def _test(qtbot, url: str, key: str = "", timeout_s: float = 8.0) -> ConnectDialog:
    dialog = ConnectDialog(url, key, timeout_s=timeout_s)
    qtbot.addWidget(dialog)
    dialog.test_button.click()
    qtbot.waitUntil(lambda: dialog.test_button.isEnabled(), timeout=60_000)
    return dialog


@pytest.fixture(scope="module")
def keyed_server(tiny_models):
    engine = Engine.load(str(tiny_models["llama"]), EngineConfig(backend="torch", dtype="float32", max_context=256))
    server = BackgroundServer(EngineHost(engine), ServerSettings(api_key="right-key"), port=0).start()
    yield server
    server.stop()
    server.host.close()
    engine.close()


def test_lists_the_models_of_confab_s_own_server(qtbot, bundled_server):
    dialog = _test(qtbot, bundled_server.url)
    assert dialog.status.text().startswith("Found an OpenAI API with 1 model")
    assert dialog.ok_button.isEnabled()
    assert dialog.chosen() == (bundled_server.url, "", "bundled:smollm2-135m-instruct")


def test_right_key_lists_models_and_wrong_key_says_401(qtbot, keyed_server):
    assert _test(qtbot, keyed_server.url, "right-key").ok_button.isEnabled()
    wrong = _test(qtbot, keyed_server.url, "wrong-key")
    assert wrong.status.text() == "The server refused the API key: check it."
    assert wrong.status.raw.startswith("AuthenticationFailedError: 401 Unauthorized")
    none = _test(qtbot, keyed_server.url, "")
    assert "asks for an API key" in none.status.text() and "none was given" in none.status.raw
    assert not wrong.ok_button.isEnabled() and wrong.model_box.count() == 0


@pytest.mark.parametrize("make_url, words, raw", [
    (lambda: f"http://127.0.0.1:{free_port()}/v1", "Nothing answers at 127.0.0.1:",
     "ServerUnreachableError: connection refused: nothing listens at 127.0.0.1:"),
    (lambda: "http://no-such-host.invalid:8317/v1", "Could not find no-such-host.invalid: check the address",
     "ServerUnreachableError: DNS: the host name 'no-such-host.invalid' could not"),
    (lambda: "ftp://127.0.0.1/v1", "That address does not answer like an OpenAI-compatible API",
     "NotOpenAIServerError: not an OpenAI API: 'ftp://127.0.0.1/v1' is not an http"),
])
def test_unreachable_servers_each_say_why(qtbot, make_url, words, raw):
    dialog = _test(qtbot, make_url())
    assert dialog.status.text().startswith(words), dialog.status.text()
    assert dialog.status.raw.startswith(raw), dialog.status.raw
    assert "Error" not in dialog.status.text() and not dialog.status.toggle.isHidden()
    assert not dialog.ok_button.isEnabled()


def test_the_fields_keep_their_size_after_a_long_answer(qtbot):
    dialog = ConnectDialog(f"http://127.0.0.1:{free_port()}/v1")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    before = (dialog.url_edit.size(), dialog.key_edit.size())
    dialog.test_button.click()
    qtbot.waitUntil(lambda: dialog.test_button.isEnabled(), timeout=60_000)
    dialog.status.toggle.click()  # the raw error too: three more lines
    qtbot.waitUntil(lambda: dialog.height() >= dialog.layout().totalHeightForWidth(dialog.width()), timeout=5_000)
    assert (dialog.url_edit.size(), dialog.key_edit.size()) == before
    assert dialog.url_edit.width() >= 300, "room for a URL with a port and /v1"


def test_a_web_page_is_not_an_openai_api(qtbot):
    with http_stub() as url:
        dialog = _test(qtbot, url)
    assert dialog.status.raw == f"NotOpenAIServerError: not an OpenAI API: {url}/models did not answer JSON"
    assert dialog.status.text().startswith("That address does not answer like an OpenAI-compatible API")


def test_a_service_without_models_is_not_an_openai_api(qtbot):
    with http_stub(404, b'{"detail": "Not Found"}', "application/json") as url:
        assert "not an OpenAI API" in _test(qtbot, url).status.raw
    with http_stub(200, b'{"hello": "world"}', "application/json") as url:
        assert _test(qtbot, url).status.raw.endswith("/models did not list models")


def test_a_server_that_never_answers_times_out(qtbot):
    with silent_socket() as url:
        dialog = _test(qtbot, url, timeout_s=1.0)
    assert dialog.status.raw.startswith("ServerUnreachableError: timeout: 127.0.0.1:")
    assert "did not answer in time" in dialog.status.text()


def test_editing_the_url_needs_a_new_test(qtbot, bundled_server):
    dialog = _test(qtbot, bundled_server.url)
    dialog.url_edit.textEdited.emit("http://elsewhere/v1")
    assert not dialog.ok_button.isEnabled() and dialog.model_box.count() == 0
