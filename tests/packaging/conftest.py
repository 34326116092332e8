"""Fast checks of the installer files: no PyInstaller, no build, no network; seconds in all.

packaging/ is not a Python package (a package of that name would shadow the `packaging` library), so
its shared module is imported here as `build_info` with the folder put on sys.path.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

import bootstrap
import gpu_detect  # bootstrap put packaging/ on sys.path
from tests.packaging.bootstrap_stand_ins import Pip

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"


@pytest.fixture(scope="session")
def build_info():
    if str(PACKAGING) not in sys.path:
        sys.path.insert(0, str(PACKAGING))
    return importlib.import_module("build_info")


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout with this pyproject.toml and an existing .venv (its python a placeholder), on a
    machine with no GPU (whatever this one has)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    venv = tmp_path / ".venv"
    monkeypatch.setattr(bootstrap, "ROOT", tmp_path)
    monkeypatch.setattr(bootstrap, "VENV", venv)
    bootstrap.venv_python().parent.mkdir(parents=True)
    bootstrap.venv_python().write_text("")
    for name in ("CMAKE_ARGS", "CONFAB_REQUIRE_LLAMA", "CONFAB_LLAMA_GPU"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(gpu_detect, "nvidia_gpus", lambda environ: [])
    monkeypatch.setattr(gpu_detect, "vulkan_toolchain", lambda environ: None)
    pip = Pip()
    monkeypatch.setattr(bootstrap.subprocess, "run", pip)
    monkeypatch.setattr(bootstrap.build_progress, "run_with_progress", pip.build)
    monkeypatch.setattr(bootstrap.llama_source, "patched_source", pip.source)
    return tmp_path, pip


@pytest.fixture
def gpu_machine(checkout, monkeypatch):
    """The checkout on a machine with an RTX 4070 (driver for CUDA 12.4) and CUDA 12.4 installed."""
    root, pip = checkout
    card = gpu_detect.Gpu("NVIDIA GeForce RTX 4070", "8.9", 12282, "550.54.14", "12.4")
    nvcc = gpu_detect.CudaCompiler(Path("/usr/local/cuda-12.4/bin/nvcc"), "12.4", "PATH", Path("/usr/local/cuda-12.4"))
    monkeypatch.setattr(gpu_detect, "nvidia_gpus", lambda environ: [card])
    monkeypatch.setattr(gpu_detect, "cuda_compilers", lambda environ, venv: [nvcc])
    monkeypatch.setattr(gpu_detect, "toolkit_lacks", lambda root: [])
    return root, pip
