"""Status and errors are readable: notices fit beside the figures (elided, whole text in a tooltip)
and clear when the conversation changes; the figures are in words; a failed load opens a dialog with
the whole message; the Load model dialog marks the loaded model and will not load a broken file."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from engine import EngineConfig  # noqa: E402
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: E402,F401 (fixtures)

CONFIG = EngineConfig(backend="torch", dtype="float32", max_context=1024)
TIMEOUT = 60_000
LONG_NOTICE = "Could not load /a/very/long/path/" + "deeper/" * 30 + "model.gguf: it is not a model file"


def test_a_long_notice_fits_left_of_the_figures_with_the_whole_text_in_a_tooltip(qtbot, window):
    window.resize(640, 400)
    window.figures.setText("3 of 124 conversations in memory · App memory 1.2 GiB")
    qtbot.waitUntil(lambda: _left(window.figures) > 0, timeout=5_000)
    window.notices.show(LONG_NOTICE)
    shown = window.statusBar().currentMessage()
    assert shown.endswith("…") and shown != LONG_NOTICE
    width = window.statusBar().fontMetrics().horizontalAdvance(shown)
    assert width <= _left(window.figures)  # never drawn under the figures (or the line before them)
    assert window.statusBar().toolTip() == LONG_NOTICE
    window.resize(1400, 400)  # more room: more of it shows
    qtbot.waitUntil(lambda: len(window.statusBar().currentMessage()) > len(shown), timeout=5_000)


def _left(label) -> int:
    """Where a status bar part starts, in the bar's coordinates (its line included)."""
    return label.parentWidget().x()


def test_a_notice_clears_when_the_conversation_changes(qtbot, window):
    created = []
    window.bridge.run(lambda store: store.create_conversation("Other")).success(created.append)
    qtbot.waitUntil(lambda: bool(created), timeout=5_000)
    window.show_error("the last reply failed")
    assert "The last reply failed." in window.statusBar().currentMessage()  # in words: a sentence
    window.show_conversation(created[0].id)
    assert window.statusBar().currentMessage() == "" and window.statusBar().toolTip() == ""


def test_figures_are_words(window):
    from engine import Capacity

    window.figures.set_capacity_source(lambda: Capacity(10 << 20, 2 << 20, 124, 3, 248 << 20))
    assert window.figures.text().startswith("3 of 124 conversations in memory · App memory ")
    assert "Sessions" not in window.figures.text() and "room for 124" in window.figures.toolTip()


@pytest.fixture
def confab(qapp, qtbot, tiny_models, tmp_path, monkeypatch):
    from app.application import ConfabApp

    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    apps = []

    def start(source):
        app = ConfabApp(qapp, tmp_path / "home", CONFIG, use_tray=False)
        apps.append(app)
        qtbot.addWidget(app.window)
        app.show_window()
        app.load(str(source))
        qtbot.waitUntil(lambda: app.window.state != "loading", timeout=TIMEOUT)
        return app

    yield start
    for app in apps:
        app.shutdown()


def test_a_failed_load_opens_a_dialog_with_the_whole_message(qtbot, confab, tiny_models, tmp_path):
    app = confab(tiny_models["llama"])
    name = app.engine.model.name
    assert name in app.window.windowTitle() and name in app.window.model_label.text()
    missing = tmp_path / ("a-folder-with-a-long-name-" * 6) / "model"
    app.load(str(missing))
    qtbot.waitUntil(lambda: app.window.error_dialog is not None, timeout=TIMEOUT)
    dialog = app.window.error_dialog
    assert str(missing) in dialog.text() and f"Still using {name}" in dialog.text()
    assert dialog.informativeText()  # the engine's whole reason, not cut
    assert app.window.state == "ready" and app.window.composer.isEnabled()
    dialog.accept()
    qtbot.waitUntil(lambda: app.window.error_dialog is None, timeout=5_000)


def test_the_picker_marks_the_loaded_model_and_will_not_load_a_broken_file(qtbot, confab, tiny_models, tmp_path):
    from app.models.picker import ModelPickerDialog

    app = confab(tiny_models["llama"])
    name = app.engine.model.name
    dialog = ModelPickerDialog(app.source, app.window, max_context=1024, loaded_name=name)
    qtbot.addWidget(dialog)
    row = dialog.loaded_row()
    assert row is not None and dialog.source_at(row) == app.source
    assert dialog.item(row).text(0) == f"{name} (loaded)" and dialog.item(row).font(0).bold()
    assert dialog.chosen_source() == app.source
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 46)
    dialog.add_source(str(bad))
    qtbot.waitUntil(lambda: "Cannot load this model" in dialog.estimate.text(), timeout=TIMEOUT)
    assert not dialog.load_button.isEnabled()
    dialog.add_source(str(tiny_models["llama"]))  # a loadable one: Load comes back
    qtbot.waitUntil(lambda: dialog.load_button.isEnabled(), timeout=TIMEOUT)


def test_the_status_bar_parts_are_apart_and_name_the_backend(qtbot, window):
    """Memory, model and backend are separate parts, each after a line, never one run of text."""
    from PySide6.QtWidgets import QFrame

    from app.window.status_parts import StatusPart

    window.resize(1400, 500)
    window.set_model("SmolLM2-135M-Instruct", "llamacpp", "cpu", max_context=4096, precision="Q4_1",
                     backend_reason="a .gguf file runs on llama.cpp")
    parts = [p for p in window.statusBar().findChildren(StatusPart) if p.isVisible()]
    assert [p.label for p in parts] == [window.figures, window.model_label, window.backend_label]
    assert all(p.findChild(QFrame).frameShape() == QFrame.Shape.VLine for p in parts)
    qtbot.waitUntil(lambda: parts[0].x() > 0)
    assert parts[0].geometry().right() < parts[1].x() and parts[1].geometry().right() < parts[2].x()
    assert window.model_label.text() == "SmolLM2-135M-Instruct"
    assert window.backend_label.text() == "llama.cpp on CPU · Q4_1"
    assert "Why: a .gguf file runs on llama.cpp" in window.backend_label.toolTip()
    window.set_model("Qwen3-0.6B", "mlx", "metal", precision="bfloat16")
    assert window.backend_label.text() == "MLX on Apple GPU · bfloat16"
    assert "Why:" not in window.backend_label.toolTip()  # an engine without a reason: none shown


def test_a_failed_kernel_check_is_said_in_the_status_bar(window):
    """llama.cpp's load-time check disagreed and the model runs on plain kernels: the bar says so."""
    note = ("kernel check failed (one call and one-token pieces differed by 11.40 on the amx path "
            "(tolerance 2)): running on plain kernels")
    window.set_model("SmolLM2-135M-Instruct", "llamacpp", "cpu", precision="Q4_1",
                     backend_reason=f"llama.cpp: a GGUF file runs as stored; {note}", kernel_warning=note)
    assert window.backend_label.text() == "llama.cpp on CPU · Q4_1 · kernel check failed"
    assert f"Why: llama.cpp: a GGUF file runs as stored; {note}" in window.backend_label.toolTip()
    window.set_model("SmolLM2-135M-Instruct", "llamacpp", "cpu", precision="Q4_1")
    assert window.backend_label.text() == "llama.cpp on CPU · Q4_1"


def test_a_draft_model_is_said_in_the_status_bar(window):
    window.set_model("SmolLM2-1.7B-Instruct", "llamacpp", "cpu", precision="Q4_0",
                     draft_model="smollm2-135m-instruct (llama 256M Q4_1 (GGUF, as stored))")
    assert window.backend_label.text() == "llama.cpp on CPU · Q4_0 · drafting with smollm2-135m-instruct"
    assert "Draft model: smollm2-135m-instruct (llama 256M Q4_1" in window.backend_label.toolTip()
    window.set_model("SmolLM2-1.7B-Instruct", "llamacpp", "cpu", precision="Q4_0")
    assert "drafting" not in window.backend_label.text() and "Draft" not in window.backend_label.toolTip()


def test_a_gpu_says_which_card_and_how_many_layers(qtbot, window):
    """llama.cpp on a GPU: the card and the layers on it, in both forms; why that many, in the tooltip."""
    window.resize(1600, 400)
    window.set_model("Llama-3.1-8B-Instruct", "llamacpp", "cuda", precision="Q4_K", placement="RTX 4070 · 33/33 layers",
                     placement_reason="the whole model fits the GPU (33/33 layers)")
    label = window.backend_label
    assert label.text() == "llama.cpp on NVIDIA GPU (CUDA) · RTX 4070 · 33/33 layers · Q4_K"
    assert "GPU: the whole model fits the GPU (33/33 layers)" in label.toolTip()
    window.resize(700, 400)
    qtbot.waitUntil(lambda: label.shown_text() != label.text(), timeout=5_000)
    assert label.compact_text() == "llama.cpp · CUDA · RTX 4070 · 33/33 layers"
    assert label.shown_text() == label.compact_text() or label.shown_text().endswith("…")


def test_a_gpu_build_that_found_no_gpu_says_why_in_the_tooltip(window):
    reason = "this llama.cpp is built for CUDA but found no GPU: is the driver installed and working?"
    window.set_model("SmolLM2-135M-Instruct", "llamacpp", "cpu", precision="Q4_1", placement_reason=reason)
    assert window.backend_label.text() == "llama.cpp on CPU · Q4_1"
    assert f"GPU: {reason}" in window.backend_label.toolTip()


def test_a_narrow_window_elides_each_part_and_keeps_its_whole_text(qtbot, window):
    window.set_model("SmolLM2-135M-Instruct", "torch", "cpu", precision="float32 · 4-bit weights")
    window.stats_label.setText("41.0 tok/s · TTFT 85 ms")
    window.resize(700, 400)
    label = window.backend_label
    qtbot.waitUntil(lambda: label.shown_text() != label.text(), timeout=5_000)
    shown = label.shown_text()  # its compact form ("PyTorch · CPU", the rest in its tooltip), or elided
    assert shown in ("PyTorch · CPU",) or shown.endswith("…")
    assert label.text() == "PyTorch on CPU · float32 · 4-bit weights" and "float32" in label.toolTip()
    window.resize(1600, 400)
    qtbot.waitUntil(lambda: label.shown_text() == label.text(), timeout=5_000)


def test_the_speed_part_shows_once_a_reply_has_figures(window):
    speed = window.stats_label.parentWidget()
    assert not speed.isVisible()
    window.stats_label.setText("41.0 tok/s · TTFT 85 ms")
    assert speed.isVisible()


@pytest.mark.parametrize("backend, device, text", [
    ("torch", "cuda", "PyTorch on NVIDIA GPU (CUDA) · bfloat16"),
    ("torch", "cpu", "PyTorch on CPU · bfloat16"),
    ("remote", "127.0.0.1:8317", "Remote server at 127.0.0.1:8317"),
    ("newlib", "npu", "newlib on npu · bfloat16"),
])
def test_backend_words(backend, device, text):
    from app.window.status_parts import backend_text

    assert backend_text(backend, device, "bfloat16") == text
