"""Load model's "GPU layers" row: Auto by default, shown only where llama.cpp's build can use a GPU,
and what was chosen goes to the engine for that model."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtWidgets import QDialog  # noqa: E402

from engine import DEFAULT_MODEL, EngineConfig  # noqa: E402


@pytest.fixture
def picker(qtbot, monkeypatch):
    def make(gpu: bool, **kwargs):
        from app.models import picker as module

        monkeypatch.setattr(module, "gpu_offload_available", lambda: gpu)
        monkeypatch.setattr(module, "find_models", lambda extra_dirs: [])  # the search is not the point here
        dialog = module.ModelPickerDialog(DEFAULT_MODEL, **kwargs)
        qtbot.addWidget(dialog)
        dialog.show()
        return dialog

    return make


def test_a_gpu_build_offers_gpu_layers_auto_by_default(picker):
    dialog = picker(gpu=True)
    row = dialog.gpu_layers
    assert row.isVisible() and row.spin.text() == "Auto" and dialog.chosen_gpu_layers() is None
    row.spin.setValue(12)
    assert dialog.chosen_gpu_layers() == 12
    row.spin.setValue(0)
    assert dialog.chosen_gpu_layers() == 0, "0: the CPU alone"


def test_the_row_shows_what_was_chosen_before(picker):
    assert picker(gpu=True, gpu_layers=20).chosen_gpu_layers() == 20


def test_a_build_without_a_gpu_shows_no_gpu_layers(picker):
    dialog = picker(gpu=False, gpu_layers=20)
    assert not dialog.gpu_layers.isVisible() and dialog.chosen_gpu_layers() is None


def test_the_choice_goes_to_the_engine_for_that_model(qtbot, qapp, tmp_path, monkeypatch, tiny_models):
    from app.application import ConfabApp
    from app.models import picker as module

    confab = ConfabApp(qapp, tmp_path / "home", EngineConfig(backend="torch", dtype="float32"), use_tray=False)
    qtbot.addWidget(confab.window)
    loads: list[tuple[str, EngineConfig]] = []
    monkeypatch.setattr(confab.loader, "load", lambda source, config, api_key=None: loads.append((source, config)))

    class Chosen:
        def __init__(self, *args, **kwargs):
            self.shown_with = kwargs.get("gpu_layers")

        def exec(self):
            return QDialog.DialogCode.Accepted

        def chosen_source(self):
            return str(tiny_models["llama"])

        def chosen_options(self):
            from app.models.load_options import LoadOptions

            return LoadOptions(max_context=2048, gpu_layers=7)

    monkeypatch.setattr("app.application.ModelPickerDialog", Chosen)
    confab.pick_model()
    assert loads[-1][0] == str(tiny_models["llama"]) and loads[-1][1].gpu_layers == 7
    assert loads[-1][1].max_context == 2048
    assert confab._config_for(DEFAULT_MODEL).gpu_layers is None, "another model keeps Auto"
    assert module.gpu_offload_available() in (True, False)
    confab.shutdown()
