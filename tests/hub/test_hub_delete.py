"""Downloaded models can be deleted from Model ▸ Load model…, freeing the disk."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.models.discovery import find_models
from app.models.files import delete_downloaded
from app.models.picker import ModelPickerDialog
from engine.models.hub_download import Download, repo_folder
from tests.hub.conftest import GGUF_BYTES


def test_delete_frees_the_blobs_and_the_picker_forgets_it(hub):
    path = Download("test-org/tiny-GGUF", ["tiny-Q4_K_M.gguf"]).run()
    other = Download("test-org/tiny-GGUF", ["tiny-Q8_0.gguf"]).run()
    assert delete_downloaded(str(path)) == len(GGUF_BYTES)
    sources = [c.source for c in find_models()]
    assert str(path) not in sources and str(other) in sources
    delete_downloaded(str(other))
    assert not repo_folder("test-org/tiny-GGUF").exists()


def test_delete_refuses_paths_outside_the_cache(tmp_path):
    import pytest

    (tmp_path / "x.gguf").write_bytes(b"x")
    with pytest.raises(ValueError):
        delete_downloaded(str(tmp_path / "x.gguf"))
    assert (tmp_path / "x.gguf").exists()


def test_picker_deletes_a_downloaded_model_with_its_size_shown(qtbot, hub, monkeypatch):
    folder = Download("test-org/tiny-GGUF", ["tiny-Q8_0.gguf"]).run()
    dialog = ModelPickerDialog("bundled:smollm2-135m-instruct")
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.count() >= 2)
    asked = []
    monkeypatch.setattr(dialog, "confirm_delete", lambda name, size: asked.append(size) or True)
    row = next(i for i in range(dialog.count()) if dialog.source_at(i) == str(folder))
    dialog.models.setCurrentItem(dialog.item(row))
    assert dialog.delete_button.isEnabled()
    qtbot.mouseClick(dialog.delete_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: all(dialog.source_at(i) != str(folder) for i in range(dialog.count())))
    assert asked and "KiB" in asked[0]
    assert not folder.exists()
    dialog.models.setCurrentItem(dialog.item(0))  # the bundled model cannot be deleted
    assert not dialog.delete_button.isEnabled()
    dialog.reject()
