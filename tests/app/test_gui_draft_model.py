"""A draft model chosen in Settings: kept with the settings, loaded beside a llama.cpp model (the
status bar says so), and skipped, with the reason, where it cannot draft for the model loaded."""

from __future__ import annotations

import os
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from tests.app.gui_fixtures import accepting_settings_dialog  # noqa: E402

from engine import EngineConfig  # noqa: E402
from engine.errors import ModelLoadError  # noqa: E402
from app.settings.app_settings import AppSettings, load_settings, save_settings  # noqa: E402
from app.settings.dialog import SettingsDialog  # noqa: E402

TIMEOUT = 120_000


def _bundled_gguf() -> str:
    from engine.models.sources import bundled_gguf

    return str(bundled_gguf("smollm2-135m-instruct"))


def test_the_settings_dialog_chooses_clears_and_keeps_a_draft_model(qtbot, tmp_path, monkeypatch):
    import app.settings.draft_model_row as row_module

    dialog = SettingsDialog(AppSettings(), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    row = dialog.draft_model
    assert row.value() == "" and not row.clear.isEnabled() and row.path.placeholderText()
    monkeypatch.setattr(row_module, "open_file", lambda *a: tmp_path / "small.gguf")
    row.choose.click()
    chosen = dialog.result_settings()
    assert chosen.draft_model == str(tmp_path / "small.gguf") and row.clear.isEnabled()
    save_settings(tmp_path, chosen)
    assert load_settings(tmp_path).draft_model == str(tmp_path / "small.gguf")
    row.clear.click()
    assert dialog.result_settings().draft_model == ""
    dialog.speculative.setChecked(False)  # no drafting: no draft model to choose
    assert not row.isEnabled()


@pytest.fixture
def start(qapp, qtbot, tmp_path):
    from app.application import ConfabApp

    apps = []

    def make(source: str, config: EngineConfig, settings: AppSettings):
        save_settings(tmp_path / "home", settings)
        confab = ConfabApp(qapp, tmp_path / "home", config, use_tray=False)
        apps.append(confab)
        qtbot.addWidget(confab.window)
        confab.show_window()
        confab.load(source)
        qtbot.waitUntil(lambda: confab.window.state != "loading", timeout=TIMEOUT)
        return confab

    yield make
    for confab in apps:
        confab.shutdown()


def test_a_draft_model_from_settings_drafts_beside_a_llamacpp_model(start):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    confab = start("bundled:smollm2-135m-instruct", EngineConfig(backend="llamacpp", max_context=512, max_sessions=2),
                   AppSettings(draft_model=_bundled_gguf()))
    assert confab.window.state == "ready"
    assert confab.engine.draft_model.startswith("SmolLM2-135M-Instruct.Q4_1")  # the file's name
    assert "drafting with SmolLM2-135M-Instruct.Q4_1" in confab.window.backend_label.text()


def test_a_draft_model_that_cannot_draft_is_skipped_with_the_reason(qtbot, start, tiny_models, monkeypatch):
    """A torch model cannot take a draft model: it loads without one and the window says why. Choosing
    one in Settings loads the model again."""
    import app.application as application

    confab = start(str(tiny_models["llama"]), EngineConfig(backend="torch", dtype="float32", max_context=256),
                   AppSettings())
    assert confab.window.state == "ready" and confab.window.error_dialog is None
    first = confab.engine
    changed = replace(confab.settings, draft_model=_bundled_gguf())


    monkeypatch.setattr(application, "SettingsDialog", accepting_settings_dialog(changed))
    confab.edit_settings()
    qtbot.waitUntil(lambda: confab.engine is not first and confab.window.state == "ready", timeout=TIMEOUT)
    assert confab.engine.draft_model == "" and "drafting" not in confab.window.backend_label.text()
    box = confab.window.error_dialog
    assert box is not None and box.windowTitle() == "Could not use the draft model"
    assert "runs without it" in box.text() and "llama.cpp" in box.informativeText() + box.detailedText()


def test_a_draft_model_file_that_fails_says_why_and_is_not_tried_again(qtbot, start, tmp_path):
    """Issue 38 (6c): a bad draft model's message gives llama.cpp's own reason (not "see its message
    above", which the user never sees), and drafting is turned off in Settings so the next start does
    not try the same file again; the path and every other setting are kept."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"this is not a model" * 100)
    settings = AppSettings(draft_model=str(junk), max_tokens=777, theme="dark")
    confab = start("bundled:smollm2-135m-instruct", EngineConfig(backend="llamacpp", max_context=512, max_sessions=2),
                   settings)
    assert confab.window.state == "ready" and confab.engine.draft_model == ""
    box = confab.window.error_dialog
    assert box is not None and box.windowTitle() == "Could not use the draft model"
    said = box.text() + box.informativeText() + box.detailedText()
    assert "message above" not in said and "junk.gguf" in said and "GGUF" in said
    assert "Drafting is now off in Settings" in box.text()
    kept = load_settings(tmp_path / "home")
    assert not kept.speculative and kept.draft_model == str(junk)  # not retried; the path is not lost
    assert (kept.max_tokens, kept.theme) == (777, "dark")


def test_the_reason_llama_cpp_logs_replaces_see_its_message_above(tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from engine.backends.llamacpp import LlamaCppBackend

    import gguf
    import numpy as np

    bad = tmp_path / "bad.gguf"  # a whole GGUF file, of an architecture llama.cpp does not know
    writer = gguf.GGUFWriter(str(bad), "nope")
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    backend = LlamaCppBackend("cpu", "auto", EngineConfig(backend="llamacpp", max_context=256))
    with pytest.raises(ModelLoadError) as caught:
        backend.load(bad, {})
    backend.close()
    said = str(caught.value)
    assert "message above" not in said and said.startswith("llama.cpp could not load bad.gguf: ")
    assert "nope" in said  # llama.cpp's own reason: the architecture it does not know
