"""Models are found in the usual places, and the model picker shows them with a memory estimate."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.models.discovery import ModelCandidate, find_models  # noqa: E402
from engine import DEFAULT_MODEL  # noqa: E402


def folder_model(path, weights=(("model.safetensors", 100),)):
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    for name, size in weights:
        (path / name).write_bytes(b"\0" * size)
    return path


def gguf(path, size=50):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF" + b"\0" * (size - 4))
    return path


@pytest.fixture
def homes(tmp_path, monkeypatch):
    """Empty HOME, HF_HOME and CONFAB_HOME under tmp_path."""
    home, hf, confab = tmp_path / "home", tmp_path / "hf", tmp_path / "confab"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(hf))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("CONFAB_HOME", str(confab))
    return home, hf, confab


def test_nothing_installed_finds_nothing(homes):
    assert find_models() == []


def test_finds_models_in_every_usual_place(homes):
    home, hf, confab = homes
    snap = folder_model(hf / "hub" / "models--HuggingFaceTB--SmolLM2-360M" / "snapshots" / "abc123",
                        weights=(("model-00001-of-00002.safetensors", 300), ("model-00002-of-00002.safetensors", 200)))
    (hf / "hub" / "models--HuggingFaceTB--SmolLM2-360M" / "refs").mkdir()
    gguf(hf / "hub" / "models--bartowski--Qwen-GGUF" / "snapshots" / "r1" / "Qwen-Q4_K_M.gguf")
    gguf(hf / "hub" / "datasets--x--y" / "snapshots" / "r" / "data.gguf")  # not a model repo
    lms = gguf(home / ".lmstudio" / "models" / "lmstudio-community" / "Llama-GGUF" / "Llama-Q4.gguf", size=70)
    gguf(home / ".lmstudio" / "models" / "lmstudio-community" / "Llama-GGUF" / "mmproj-f16.gguf")
    gguf(home / ".lmstudio" / "models" / "big" / "Big-00001-of-00002.gguf")
    mlx = folder_model(home / ".cache" / "lm-studio" / "models" / "mlx-community" / "Qwen3-4bit")
    own = folder_model(confab / "models" / "my-model")
    gguf(confab / "models" / "tiny.gguf", size=10)
    (confab / "models" / "empty-folder").mkdir()

    found = {c.source: c for c in find_models()}
    assert found == {
        str(snap): ModelCandidate("HuggingFaceTB/SmolLM2-360M", str(snap), "folder", 500, "Hugging Face cache"),
        str(hf / "hub" / "models--bartowski--Qwen-GGUF" / "snapshots" / "r1" / "Qwen-Q4_K_M.gguf"):
            ModelCandidate("bartowski/Qwen-GGUF/Qwen-Q4_K_M.gguf",
                           str(hf / "hub" / "models--bartowski--Qwen-GGUF" / "snapshots" / "r1" / "Qwen-Q4_K_M.gguf"),
                           "gguf", 50, "Hugging Face cache"),
        str(lms): ModelCandidate("lmstudio-community/Llama-GGUF/Llama-Q4.gguf", str(lms), "gguf", 70, "LM Studio"),
        str(mlx): ModelCandidate("mlx-community/Qwen3-4bit", str(mlx), "folder", 100, "LM Studio"),
        str(own): ModelCandidate("my-model", str(own), "folder", 100, "Confab"),
        str(confab / "models" / "tiny.gguf"): ModelCandidate("tiny.gguf", str(confab / "models" / "tiny.gguf"),
                                                             "gguf", 10, "Confab"),
    }


def test_hf_hub_cache_symlinks_count_their_blobs(homes):
    _, hf, _ = homes
    repo = hf / "hub" / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "aaa").write_bytes(b"\0" * 1234)
    (repo / "blobs" / "bbb").write_text("{}")
    snap = repo / "snapshots" / "rev"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").symlink_to(repo / "blobs" / "aaa")
    (snap / "config.json").symlink_to(repo / "blobs" / "bbb")
    assert [(c.name, c.size_bytes) for c in find_models()] == [("org/name", 1234)]


def test_unreadable_and_odd_entries_are_skipped(homes, tmp_path):
    home, hf, confab = homes
    (hf / "hub").mkdir(parents=True)
    (hf / "hub" / "models--broken").write_text("a file where a folder should be")
    (home / ".lmstudio").write_text("not a folder")
    locked = confab / "models" / "locked"
    folder_model(locked)
    (locked.parent / "dangling.gguf").symlink_to(tmp_path / "gone.gguf")
    locked.chmod(0)
    try:
        found = find_models(extra_dirs=[tmp_path / "missing"])
    finally:
        locked.chmod(0o755)
    assert all(c.source != str(locked.parent / "dangling.gguf") for c in found)


def test_extra_dirs_are_searched_and_sources_listed_once(homes, tmp_path):
    _, _, confab = homes
    own = folder_model(confab / "models" / "m")
    extra = folder_model(tmp_path / "elsewhere" / "other")
    found = find_models(extra_dirs=[confab / "models", tmp_path / "elsewhere"])
    assert [(c.source, c.where) for c in found] == [(str(own), "Confab"), (str(extra), "Other")]


# -- the picker --------------------------------------------------------------------------------------
def test_picker_lists_bundled_first_with_an_estimate(qtbot, homes):
    from app.models.picker import ModelPickerDialog

    home, _, _ = homes
    gguf(home / ".lmstudio" / "models" / "a" / "b" / "x.gguf")
    dialog = ModelPickerDialog("")
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.source_at(0) == DEFAULT_MODEL
    assert dialog.chosen_source() == DEFAULT_MODEL
    qtbot.waitUntil(lambda: "Weights ≈" in dialog.estimate.text(), timeout=120_000)
    text = dialog.estimate.text()
    assert "MiB" in text and "each conversation up to" in text and "4,096 tokens" in text
    qtbot.waitUntil(lambda: dialog.count() == 2, timeout=30_000)  # found in LM Studio's folder
    assert dialog.item(1).text(1) == "LM Studio"


def test_picker_estimates_a_browsed_folder_and_names_a_broken_file(qtbot, homes, tiny_models, tmp_path):
    from app.models.picker import ModelPickerDialog, estimate_text
    from engine import estimate_memory

    dialog = ModelPickerDialog(DEFAULT_MODEL, max_context=1024)
    qtbot.addWidget(dialog)
    dialog.show()
    tiny = str(tiny_models["llama"])
    expected = estimate_text(estimate_memory(tiny, max_context=1024))
    dialog.add_source(tiny)  # while the bundled model's estimate may still be running
    assert dialog.chosen_source() == tiny
    assert dialog.source_at(1) == tiny
    qtbot.waitUntil(lambda: dialog.estimate.text() == expected, timeout=120_000)
    qtbot.waitUntil(lambda: dialog._estimating is None, timeout=120_000)
    assert dialog.estimate.text() == expected  # a late result for the bundled entry did not replace it

    bad = gguf(tmp_path / "bad.gguf")
    dialog.add_source(str(bad))
    qtbot.waitUntil(lambda: "Cannot load this model" in dialog.estimate.text(), timeout=120_000)
    assert "bad.gguf" in dialog.estimate.text()
    dialog.add_source(tiny)  # back again: the cached estimate, at once
    assert dialog.estimate.text() == expected
