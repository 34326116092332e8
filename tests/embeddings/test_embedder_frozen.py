"""A frozen (installed) build finds the bundled embedding model in its own data folder, laid out as
the PyInstaller spec ships it, without the package that carries it in a source install."""

from __future__ import annotations

import shutil
import sys

from engine.embeddings.models import bundled_folder, frozen_embedder_dir, locate

NAME = "all-minilm-l6-v2"


def test_the_frozen_app_reads_the_shipped_folder(monkeypatch, tmp_path):
    installed = bundled_folder(NAME)
    shipped = tmp_path / "bundle" / frozen_embedder_dir(NAME)
    shutil.copytree(installed, shipped, ignore=shutil.ignore_patterns("*.safetensors"))
    (shipped / "model.safetensors").symlink_to(installed / "model.safetensors")  # large: a link will do
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path / "bundle"), raising=False)
    assert bundled_folder(NAME) == shipped
    assert locate(f"bundled:{NAME}").path == shipped


def test_a_frozen_build_without_it_falls_back_to_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path / "empty"), raising=False)
    assert bundled_folder(NAME) != tmp_path / "empty" / frozen_embedder_dir(NAME)
