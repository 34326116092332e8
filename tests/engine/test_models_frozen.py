"""A frozen build (the installers) runs the bundled model from the GGUF it ships, on llama.cpp.

The file sits under sys._MEIPASS/models/<name>/, its config and tokenizer (read at build time) in
meta/ beside it, as the PyInstaller spec lays them out; from a checkout the GGUF comes from its
package as before. The shipped file must give the same fingerprint, so saved session states match.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from engine import backends
from engine.errors import ModelLoadError
from engine.models import resolve
from engine.models.sources import BUNDLED, FROZEN_META_DIR, FROZEN_MODELS_DIR, bundled_gguf, locate

NAME = "smollm2-135m-instruct"
SOURCE = f"bundled:{NAME}"


@pytest.fixture(scope="module")
def stored():
    """The bundled model as the llama.cpp backend resolves it from a checkout (GGUF + read metadata)."""
    return resolve(SOURCE, as_stored=True)


def ship(stored, bundle: Path) -> Path:
    """Lay out the GGUF and its metadata as the PyInstaller spec does (a link: the file is large)."""
    folder = bundle / FROZEN_MODELS_DIR / NAME
    (folder / FROZEN_META_DIR).mkdir(parents=True)
    gguf = folder / BUNDLED[NAME][1]
    gguf.symlink_to(stored.path)
    for file in stored.tokenizer_folder.iterdir():
        shutil.copy(file, folder / FROZEN_META_DIR / file.name)
    return gguf


@pytest.fixture
def frozen(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path / "bundle"), raising=False)
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "bundle"


def test_frozen_build_runs_the_shipped_gguf_on_llama_cpp_without_writing_the_cache(stored, frozen, tmp_path):
    shipped = ship(stored, frozen)
    kind, path, name = locate(SOURCE)
    assert (kind, path, name) == ("gguf", shipped, SOURCE)
    assert backends.choose("auto", kind)[0] == "llamacpp", "the fast path, as from a source install"
    model = resolve(SOURCE, as_stored=True)
    assert model.path == shipped and model.name == SOURCE
    assert model.tokenizer_folder == shipped.parent / FROZEN_META_DIR
    assert model.fingerprint == stored.fingerprint
    assert not (tmp_path / "cache").exists(), "nothing is read out of the GGUF into the user cache"


def test_shipped_model_is_ignored_when_not_frozen(stored, frozen, monkeypatch):
    ship(stored, frozen)
    monkeypatch.setattr(sys, "frozen", False)
    assert locate(SOURCE)[1] == bundled_gguf(NAME)


def test_frozen_build_without_shipped_model_falls_back_to_the_package(stored, frozen):
    assert locate(SOURCE)[1] == bundled_gguf(NAME)


def test_metadata_outside_the_bundle_is_never_taken_as_shipped(stored, frozen, tmp_path):
    """Only the build's own folder holds metadata read at build time; a user's GGUF is read itself."""
    elsewhere = tmp_path / "user" / "model.gguf"
    (elsewhere.parent / FROZEN_META_DIR).mkdir(parents=True)
    (elsewhere.parent / FROZEN_META_DIR / "config.json").write_text("{}")
    (elsewhere.parent / FROZEN_META_DIR / "tokenizer_config.json").write_text("{}")
    elsewhere.symlink_to(stored.path)
    model = resolve(str(elsewhere), as_stored=True)
    assert model.tokenizer_folder.is_relative_to(tmp_path / "cache")


def test_frozen_build_without_llama_cpp_converts_the_shipped_gguf_for_torch(stored, frozen, tmp_path, bundled_folder):
    ship(stored, frozen)
    model = resolve(SOURCE)  # as_stored=False: the torch backend's route
    assert model.path.is_relative_to(tmp_path / "cache")
    assert (model.path / "model.safetensors").stat().st_size == (bundled_folder / "model.safetensors").stat().st_size


def test_damaged_shipped_metadata_is_reported(stored, frozen):
    gguf = ship(stored, frozen)
    (gguf.parent / FROZEN_META_DIR / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="config.json"):
        resolve(SOURCE, as_stored=True)


def test_frozen_build_estimates_the_bundled_model_from_the_shipped_gguf(stored, frozen, monkeypatch):
    import engine.models.estimate as estimate
    import engine.models.sources as sources

    from_source = estimate.estimate_memory(SOURCE, max_context=2048, dtype="float32")
    ship(stored, frozen)
    monkeypatch.setattr(sources, "bundled_gguf", lambda name: pytest.fail("the package's GGUF was read"))
    shipped = estimate.estimate_memory(SOURCE, max_context=2048, dtype="float32")
    assert shipped.name == SOURCE and shipped.bytes_per_session == from_source.bytes_per_session
    assert shipped.weights_bytes == from_source.weights_bytes
