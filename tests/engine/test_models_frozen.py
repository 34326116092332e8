"""A frozen build (the installers) loads the bundled model from the converted folder it ships.

The folder sits under sys._MEIPASS/models/<name>; from a checkout the GGUF is converted into the user
cache as before. The shipped folder must give the same fingerprint, so saved session states still match.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.errors import ModelLoadError
from engine.models import resolve
from engine.models.sources import FROZEN_MODELS_DIR

NAME = "smollm2-135m-instruct"
SOURCE = f"bundled:{NAME}"


def ship(bundled_folder: Path, bundle: Path) -> Path:
    """Lay out the converted model as the PyInstaller spec does (links: the weights are large)."""
    folder = bundle / FROZEN_MODELS_DIR / NAME
    folder.mkdir(parents=True)
    for file in bundled_folder.iterdir():
        (folder / file.name).symlink_to(file)
    return folder


@pytest.fixture
def frozen(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path / "bundle"), raising=False)
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "bundle"


def test_frozen_build_loads_the_shipped_folder_without_converting(bundled_folder, frozen, tmp_path):
    shipped = ship(bundled_folder, frozen)
    model = resolve(SOURCE)
    assert model.path == shipped
    assert model.name == SOURCE
    assert model.fingerprint == resolve(str(bundled_folder)).fingerprint
    assert not (tmp_path / "cache").exists(), "nothing is converted into the user cache"


def test_shipped_folder_is_ignored_when_not_frozen(bundled_folder, frozen, monkeypatch):
    ship(bundled_folder, frozen)
    monkeypatch.setattr(sys, "frozen", False)
    monkeypatch.delenv("CONFAB_CACHE")
    assert resolve(SOURCE).path == bundled_folder


def test_frozen_build_without_shipped_model_falls_back_to_the_gguf(bundled_folder, frozen, monkeypatch):
    monkeypatch.delenv("CONFAB_CACHE")  # the user cache already holds the conversion
    assert resolve(SOURCE).path == bundled_folder


def test_damaged_shipped_weights_are_reported(bundled_folder, frozen):
    folder = ship(bundled_folder, frozen)
    weights = folder / "model.safetensors"
    weights.unlink()
    weights.write_bytes(bundled_folder.joinpath("model.safetensors").read_bytes()[:4096])
    with pytest.raises(ModelLoadError, match="model.safetensors"):
        resolve(SOURCE)


def test_frozen_build_estimates_the_bundled_model_from_the_shipped_folder(bundled_folder, frozen, monkeypatch):
    import engine.estimate as estimate

    from_source = estimate.estimate_memory(SOURCE, max_context=2048, dtype="float32")
    ship(bundled_folder, frozen)

    def no_gguf(name):  # installers do not ship the GGUF package
        raise ModelLoadError("the GGUF package is not installed")

    import engine.models.sources as sources

    monkeypatch.setattr(sources, "bundled_gguf", no_gguf)
    shipped = estimate.estimate_memory(SOURCE, max_context=2048, dtype="float32")
    assert shipped.name == SOURCE and shipped.bytes_per_session == from_source.bytes_per_session
    assert abs(shipped.weights_bytes - from_source.weights_bytes) <= 0.03 * from_source.weights_bytes
