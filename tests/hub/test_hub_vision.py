"""A vision GGUF repo on Get models and `pull`: the model file comes with its vision projector
(mmproj), into the same folder, where the engine finds it; the projector is never offered alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.backends.llamacpp_vision import find_mmproj
from engine.models.hub import repo_options
from engine.models.hub_download import Download
from tests.hub.conftest import GGUF_BYTES
from tests.hub.fake_hub import Repo

VLM = "test-org/tiny-VL-GGUF"


@pytest.fixture
def vision_hub(hub):
    hub.repos[VLM] = Repo({"tiny-VL-Q4_K_M.gguf": GGUF_BYTES, "tiny-VL-Q8_0.gguf": GGUF_BYTES[:600000],
                           "mmproj-tiny-VL-Q8_0.gguf": GGUF_BYTES[:5000], "mmproj-tiny-VL-f16.gguf": GGUF_BYTES[:9000],
                           "README.md": b"# tiny vision"}, ["gguf", "image-text-to-text"], commit="c" * 40)
    return hub


def test_each_model_file_comes_with_the_float16_projector(vision_hub):
    options = repo_options(VLM)
    assert [o.label for o in options] == ["tiny-VL-Q4_K_M.gguf", "tiny-VL-Q8_0.gguf"]  # never the mmproj alone
    first = options[0]
    assert first.files == ("tiny-VL-Q4_K_M.gguf", "mmproj-tiny-VL-f16.gguf")
    assert first.mmproj == "mmproj-tiny-VL-f16.gguf"
    assert first.size_bytes == len(GGUF_BYTES) + 9000
    assert first.spec == f"{VLM}:tiny-VL-Q4_K_M.gguf"


def test_a_text_only_repo_downloads_the_model_alone(vision_hub):
    assert all(o.mmproj is None and len(o.files) == 1 for o in repo_options("test-org/tiny-GGUF"))


def test_the_downloaded_projector_is_found_beside_the_model(vision_hub):
    option = repo_options(VLM)[0]
    model = Download(VLM, list(option.files)).run()  # the model file, which "Load now" and the picker open
    assert model.name == "tiny-VL-Q4_K_M.gguf" and model.is_file()
    path, why = find_mmproj(model, None)
    assert path == model.parent / "mmproj-tiny-VL-f16.gguf" and "found beside the model" in why


def test_pull_of_a_named_file_brings_its_projector(vision_hub, capsys):
    from engine.__main__ import main

    assert main(["pull", f"{VLM}:tiny-VL-Q8_0.gguf"]) == 0
    model = Path(capsys.readouterr().out.strip())
    assert model.name == "tiny-VL-Q8_0.gguf"
    assert (model.parent / "mmproj-tiny-VL-f16.gguf").is_file()


def test_get_models_says_a_file_comes_with_images_and_loads_the_model_file(qtbot, vision_hub):
    from PySide6.QtCore import Qt

    from tests.hub.test_hub_dialog import _dialog, _search_and_pick

    dialog = _dialog(qtbot)
    _search_and_pick(qtbot, dialog, VLM)
    row = dialog.files.topLevelItem(0)
    assert row.text(0) == "tiny-VL-Q4_K_M.gguf + images" and "mmproj-tiny-VL-f16.gguf" in row.toolTip(0)
    dialog.files.setCurrentItem(row)
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.load_button.isVisible(), timeout=30000)
    assert dialog.downloaded_source.endswith("tiny-VL-Q4_K_M.gguf")
