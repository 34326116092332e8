"""The whole app (window, loader, settings) on a tiny model: a failed load keeps the app usable,
settings persist, and a restart shows every conversation and continues one with its context."""

from __future__ import annotations

import os
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from tests.app.gui_fixtures import accepting_settings_dialog  # noqa: E402

from engine import EngineConfig, SamplingParams  # noqa: E402

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=1024)
SHORT = SamplingParams(temperature=0, max_tokens=8, ignore_stop=True)
TIMEOUT = 60_000


@pytest.fixture
def start_app(qapp, qtbot, tiny_models, tmp_path):
    """start_app() -> a ConfabApp on tmp_path/home with the tiny llama loaded; shut down at teardown."""
    from app.application import ConfabApp

    apps = []

    def start(source=None, fall_back=False):
        confab = ConfabApp(qapp, tmp_path / "home", CONFIG, use_tray=False)
        apps.append(confab)
        qtbot.addWidget(confab.window)
        confab.show_window()
        confab.load(str(source or tiny_models["llama"]), fall_back=fall_back)
        qtbot.waitUntil(lambda: confab.window.state != "loading", timeout=TIMEOUT)
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


def test_the_model_shows_in_the_status_bar(start_app):
    confab = start_app()
    assert confab.window.state == "ready"
    assert "llama" in confab.window.model_label.text()
    assert confab.window.backend_label.text().startswith("PyTorch on CPU")
    assert confab.window.figures.text().startswith("0 of ")
    assert confab.engine.model.name in confab.window.windowTitle()
    # The precision the weights compute in, and why it was chosen for this machine.
    assert confab.engine.dtype in confab.window.backend_label.text()
    assert confab.engine.dtype_reason in confab.window.backend_label.toolTip()


def test_a_failed_load_keeps_the_previous_model_usable(qtbot, start_app, tmp_path):
    confab = start_app()
    confab.load(str(tmp_path / "no-such-model"))
    qtbot.waitUntil(lambda: confab.window.load_model_action.isEnabled(), timeout=TIMEOUT)
    assert confab.window.state == "ready"
    assert "Could not load" in confab.window.statusBar().currentMessage()
    assert send(qtbot, confab, "Still there?").finish_reason == "length"


def test_the_first_load_failing_says_why_and_disables_the_composer(qtbot, start_app, tmp_path):
    confab = start_app(tmp_path / "also-missing")
    assert confab.window.state == "failed" and not confab.window.composer.isEnabled()
    assert "Could not load" in confab.window.composer.placeholderText()


def test_a_remembered_model_that_is_gone_falls_back_to_the_default(qtbot, start_app, tiny_models, tmp_path,
                                                                   monkeypatch):
    import app.application as application

    monkeypatch.setattr(application, "DEFAULT_MODEL", str(tiny_models["llama"]))
    confab = start_app(tmp_path / "moved-away", fall_back=True)
    qtbot.waitUntil(lambda: confab.window.state == "ready", timeout=TIMEOUT)
    assert confab.source == str(tiny_models["llama"])


def test_settings_persist_across_restarts(qtbot, start_app, monkeypatch):
    import app.application as application

    confab = start_app()
    changed = replace(confab.settings, theme="dark", temperature=0.3, max_tokens=99, font_size=13)


    monkeypatch.setattr(application, "SettingsDialog", accepting_settings_dialog(changed))
    qtbot.keyClick(confab.window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    assert confab.settings == changed and confab.dark
    confab.window.close()
    confab.shutdown()
    again = start_app()
    assert again.settings.theme == "dark" and again.settings.max_tokens == 99 and again.dark
    assert again.settings.last_model.endswith("llama")


def test_restart_shows_every_conversation_and_continues_with_context(qtbot, start_app):
    confab = start_app()
    send(qtbot, confab, "My name is Ada")
    confab.window.new_conversation()
    send(qtbot, confab, "Another topic")
    confab.window.close()
    confab.shutdown()

    again = start_app()
    window = again.window
    qtbot.waitUntil(lambda: sorted(t for _, t in window.conversation_list.shown()) == ["Another topic", "My name is Ada"],
                    timeout=TIMEOUT)
    ada = next(cid for cid, title in window.conversation_list.shown() if title == "My name is Ada")
    window.show_conversation(ada)
    qtbot.waitUntil(lambda: window.chat_view.plain_text().startswith("You\nMy name is Ada"), timeout=TIMEOUT)
    finished = send(qtbot, again, "What is my name?")
    # The second turn's prompt holds the first exchange: the model sees the conversation's context.
    assert finished.stats.prompt_tokens > 2 * len(again.engine.tokenizer.encode("What is my name?"))
    seen: list = []
    again.bridge.run(lambda store: [m.role for m in store.messages(ada)]).success(seen.append)
    qtbot.waitUntil(lambda: bool(seen), timeout=TIMEOUT)
    assert seen[0] == ["user", "assistant", "user", "assistant"]


def test_the_keep_copies_setting_reaches_the_window_and_the_quick_chat(start_app):
    from dataclasses import replace

    confab = start_app()
    assert not confab.window.chat.files.tray.keep_bytes and not confab.quick_chat.files.keep_bytes
    confab.apply_settings(replace(confab.settings, keep_attachment_files=True))
    assert confab.window.chat.files.tray.keep_bytes and confab.quick_chat.files.keep_bytes
    assert confab.quick_chat.context_limit == confab.engine.max_context  # a file too big is caught there too
