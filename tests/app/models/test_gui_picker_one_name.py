"""Load model lists one model once, under one name: the loaded model reached through a link (or a
path written another way) is the same entry as the file discovery finds, not a second row with the
file's bare name."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from tests.app.models.test_model_discovery import gguf, homes  # noqa: E402,F401 (fixture)


def _names(dialog) -> list[tuple[str, str]]:
    return [(dialog.item(i).text(0), dialog.item(i).text(1)) for i in range(dialog.count())]


def test_the_loaded_model_is_one_entry_under_the_name_the_window_uses(qtbot, homes, tmp_path):  # noqa: F811
    from app.models.picker import ModelPickerDialog

    home, _, _ = homes
    found = gguf(home / ".lmstudio" / "models" / "qwen" / "Qwen2.5-0.5B" / "qwen2.5-0.5b-q4_k_m.gguf")
    link = tmp_path / "shortcut"
    link.symlink_to(found.parent)
    dialog = ModelPickerDialog(str(link / found.name), loaded_name="Qwen2.5-0.5B-Instruct")
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.status.text() != "Looking for models…", timeout=30_000)
    rows = _names(dialog)
    assert len(rows) == 2, rows  # the bundled model, and this one once
    assert rows[1] == ("Qwen2.5-0.5B-Instruct (loaded)", "Loaded now")
    assert dialog.loaded_row() == 1 and dialog.chosen_source() == str(link / found.name)
    dialog.done(0)  # its estimate, still running, is dropped


def test_a_current_model_not_loaded_takes_the_name_discovery_gives_it(qtbot, homes):  # noqa: F811
    from app.models.picker import ModelPickerDialog

    home, _, _ = homes
    found = gguf(home / ".lmstudio" / "models" / "qwen" / "Qwen2.5-0.5B" / "qwen2.5-0.5b-q4_k_m.gguf")
    dialog = ModelPickerDialog(str(found.parent) + "/./" + found.name)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.status.text() != "Looking for models…", timeout=30_000)
    assert _names(dialog)[1:] == [("qwen/Qwen2.5-0.5B/qwen2.5-0.5b-q4_k_m.gguf", "LM Studio")]
    dialog.done(0)


def test_the_bundled_model_has_the_name_the_window_gives_it(qtbot, homes):  # noqa: F811
    from app.models.picker import ModelPickerDialog
    from engine import DEFAULT_MODEL

    other = ModelPickerDialog("/nowhere/model.gguf")
    qtbot.addWidget(other)
    loaded = ModelPickerDialog(DEFAULT_MODEL, loaded_name="SmolLM2-135M-Instruct")
    qtbot.addWidget(loaded)
    assert other.item(0).text(0) == "SmolLM2-135M-Instruct"
    assert loaded.item(0).text(0) == "SmolLM2-135M-Instruct (loaded)"
    other.done(0)
    loaded.done(0)
