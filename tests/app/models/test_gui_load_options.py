"""Load model's options: the context length goes up to what the model was trained for, with the
memory it costs shown before loading; context, threads and GPU layers are remembered per model and
reach the engine, after a restart too."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtWidgets import QDialog  # noqa: E402

from engine import DEFAULT_MODEL, EngineConfig  # noqa: E402

from app.models.load_options import LoadOptions, load_options, save_load_options  # noqa: E402


@pytest.fixture
def picker(qtbot, monkeypatch, tmp_path):
    def make(**kwargs):
        from app.models import picker as module

        monkeypatch.setattr(module, "find_models", lambda extra_dirs: [])  # the search is not the point here
        dialog = module.ModelPickerDialog(DEFAULT_MODEL, options_for=lambda s: load_options(tmp_path, s), **kwargs)
        qtbot.addWidget(dialog)
        dialog.show()
        return dialog

    return make


def test_the_context_goes_up_to_the_trained_length_and_the_memory_follows(qtbot, picker):
    dialog = picker(max_context=4096)
    box = dialog.options_box
    qtbot.waitUntil(lambda: "4,096 tokens" in dialog.estimate.text(), timeout=10_000)
    assert "90 MiB at 4,096 tokens" in dialog.estimate.text()  # SmolLM2-135M: 30 layers of K/V
    qtbot.waitUntil(lambda: box.trained.text() == "of 8,192 it was trained for", timeout=10_000)
    assert box.context.maximum() == 8192
    box.context.setValue(100_000)  # past the trained length: held there
    assert box.context.value() == 8192
    qtbot.waitUntil(lambda: "180 MiB at 8,192 tokens" in dialog.estimate.text(), timeout=10_000)
    assert dialog.load_button.isEnabled()
    box.threads.setValue(1)
    assert dialog.chosen_options() == LoadOptions(max_context=8192, gpu_layers=None, threads=1)


def test_each_model_shows_what_was_chosen_for_it(qtbot, picker, tmp_path, tiny_models):
    other = str(tiny_models["llama"])
    save_load_options(tmp_path, DEFAULT_MODEL, LoadOptions(max_context=2048, threads=1))
    dialog = picker()
    assert (dialog.options_box.context.value(), dialog.options_box.threads.text()) == (2048, "1")
    dialog.add_source(other)  # nothing remembered: the defaults
    assert (dialog.options_box.context.value(), dialog.options_box.threads.text()) == (4096, "Auto")
    qtbot.waitUntil(lambda: "4,096 tokens" in dialog.estimate.text(), timeout=10_000)


def test_the_choice_is_remembered_and_loads_after_a_restart(qtbot, qapp, tmp_path, monkeypatch, tiny_models):
    from app.application import ConfabApp

    home = tmp_path / "home"
    source = str(tiny_models["llama"])
    chosen = LoadOptions(max_context=2048, threads=1)

    class Chosen:
        def __init__(self, *args, **kwargs):
            pass

        def exec(self):
            return QDialog.DialogCode.Accepted

        def chosen_source(self):
            return source

        def chosen_options(self):
            return chosen

    monkeypatch.setattr("app.application.ModelPickerDialog", Chosen)
    for restart in range(2):
        confab = ConfabApp(qapp, home, EngineConfig(backend="torch", dtype="float32"), use_tray=False)
        qtbot.addWidget(confab.window)
        loads: list[tuple[str, EngineConfig]] = []
        monkeypatch.setattr(confab.loader, "load", lambda s, config, api_key=None: loads.append((s, config)))
        if not restart:
            confab.pick_model()
            assert loads[-1][0] == source
        config = loads[-1][1] if loads else confab._config_for(source)
        assert (config.max_context, config.threads) == (2048, 1)
        assert confab._config_for(DEFAULT_MODEL).max_context == 4096, "another model keeps the default"
        assert (config.prefix_cache_dir, config.prefix_cache_bytes) == (str(home / "prompt-cache"), 4096 << 20), \
            "prompts are cached in the data folder, within Settings' cap"
        confab.shutdown()


def test_the_kv_cache_type_is_offered_with_its_memory_and_remembered(qtbot, picker, tmp_path):
    dialog = picker(max_context=4096)
    box = dialog.options_box
    qtbot.waitUntil(lambda: "90 MiB at 4,096 tokens" in dialog.estimate.text(), timeout=10_000)
    box.kv_cache.setCurrentIndex(box.kv_cache.index_of("q8_0", "q8_0"))  # keys and values 8-bit
    qtbot.waitUntil(lambda: "48 MiB at 4,096 tokens" in dialog.estimate.text(), timeout=10_000)
    chosen = dialog.chosen_options()
    assert (chosen.cache_type_k, chosen.cache_type_v) == ("q8_0", "q8_0")
    assert chosen.applied_to(EngineConfig()).cache_type_v == "q8_0"
    save_load_options(tmp_path, DEFAULT_MODEL, chosen)
    again = picker()
    assert again.options_box.kv_cache.types() == ("q8_0", "q8_0")
    box.kv_cache.setCurrentIndex(0)  # full: left to the command line, as Auto is
    assert (dialog.chosen_options().cache_type_k, dialog.chosen_options().cache_type_v) == (None, None)
