"""Load model ▸ Images: a GGUF model sees images with its vision projector, found beside it (Auto)
or chosen here; the choice is remembered per model and reaches the engine's config."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import EngineConfig  # noqa: E402

from app.models.load_options import LoadOptions, load_options, save_load_options  # noqa: E402


def test_the_chosen_projector_is_remembered_and_reaches_the_engine(tmp_path):
    model, mmproj = tmp_path / "smolvlm.gguf", tmp_path / "elsewhere" / "mmproj-f16.gguf"
    model.write_bytes(b"")
    assert save_load_options(tmp_path, str(model), LoadOptions(mmproj=str(mmproj)))
    assert load_options(tmp_path, str(model)) == LoadOptions(mmproj=str(mmproj))
    assert load_options(tmp_path, str(model)).applied_to(EngineConfig()).mmproj == str(mmproj)
    assert save_load_options(tmp_path, str(model), LoadOptions())  # Auto again: the one beside it
    assert load_options(tmp_path, str(model)).applied_to(EngineConfig()).mmproj is None


def test_the_dialog_row_chooses_a_projector_and_auto_goes_back(qtbot, tmp_path, monkeypatch):
    from app.models import load_options_box
    from app.models.load_options_box import MMPROJ_AUTO, LoadOptionsBox

    box = LoadOptionsBox()
    qtbot.addWidget(box)
    chosen = tmp_path / "mmproj-model-f16.gguf"
    monkeypatch.setattr(load_options_box, "open_file", lambda parent, caption, filters: chosen)
    assert (box.mmproj_label.text(), box.options().mmproj, box.mmproj_auto.isEnabled()) == (MMPROJ_AUTO, None, False)
    box.mmproj_button.click()
    assert (box.mmproj_label.text(), box.options().mmproj) == ("mmproj-model-f16.gguf", str(chosen))
    box.mmproj_auto.click()
    assert box.options().mmproj is None
    box.show_options(LoadOptions(mmproj=str(chosen)))  # another model's remembered choice
    assert box.mmproj_label.toolTip() == str(chosen) and box.mmproj_auto.isEnabled()
