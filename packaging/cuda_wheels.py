"""NVIDIA's CUDA toolkit from its PyPI wheels, laid out as one toolkit folder in .venv for CMake.

    root = install(python, "cuda-toolkit[nvcc,cudart,cublas,cccl,crt,nvvm]>=12.0,<12.5", venv)

For a machine with an NVIDIA card and driver but no toolkit (most desktops): the wheels go into a
folder of their own (`pip install --target`), never into site-packages, where torch's CUDA wheels
pin their own versions. CUDA 13's wheels share one folder (nvidia/cu13: bin, include, lib, nvvm);
CUDA 12's are one folder per component (nvidia/cuda_nvcc, nvidia/cublas…). Either way they are
merged here into `root` with bin/, include/, lib64/ and nvvm/, as a toolkit install has them, and the
unversioned library names CMake's FindCUDAToolkit looks for (libcudart.so next to libcudart.so.13).
nvcc's own folder is copied, not linked: nvcc finds its toolkit from where its binary lies.
Standard library only (bootstrap.py runs it before anything else is installed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import gpu_detect

PARTS = {"bin": "bin", "include": "include", "lib": "lib64", "lib64": "lib64", "nvvm": "nvvm"}
"""A wheel component's folders and where they go in the merged toolkit."""


def install(pip_command: list[str], requirement: str, venv: Path) -> Path:
    """Install `requirement` into .venv/cuda-toolkit/packages and merge it; the toolkit's root."""
    root = venv / gpu_detect.WHEEL_TOOLKIT
    packages = root / "packages"
    subprocess.run([*pip_command, "--upgrade", "--target", str(packages), requirement], check=True)
    merge(packages / "nvidia", root)
    return root


def merge(nvidia: Path, root: Path) -> None:
    """Lay every component under `nvidia` (nvidia/cu13, or nvidia/cuda_nvcc, nvidia/cublas…) out in `root`."""
    for part in list(PARTS.values()):
        target = root / part
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
    for component in sorted(p for p in nvidia.iterdir() if p.is_dir()):
        for name, part in PARTS.items():
            source = component / name
            if source.is_dir():
                _place(source, root / part, copy=(name == "bin"))
    _unversioned_names(root / "lib64")


def _place(source: Path, target: Path, copy: bool) -> None:
    """Put `source`'s entries into `target`: folders merged entry by entry, files linked (copied
    where links are not allowed, or when `copy`)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        dest = target / entry.name
        if entry.is_dir() and not entry.is_symlink():
            _place(entry, dest, copy)
        elif not dest.exists():
            _link_or_copy(entry, dest, copy)


def _link_or_copy(source: Path, dest: Path, copy: bool) -> None:
    if not copy:
        try:
            os.symlink(os.path.relpath(source.resolve(), dest.parent), dest)  # relative: the .venv may move
            return
        except OSError:  # Windows without the right to make links
            pass
    shutil.copy2(source, dest)


_VERSIONED = re.compile(r"^(lib[\w+-]+\.so)\.\d+$")


def _unversioned_names(lib: Path) -> None:
    """libcublas.so -> libcublas.so.13 where only the versioned name exists (find_library needs it)."""
    if not lib.is_dir():
        return
    for entry in lib.iterdir():
        match = _VERSIONED.match(entry.name)
        if match and not (lib / match.group(1)).exists():
            _link_or_copy(entry, lib / match.group(1), copy=False)


RUNTIME = ("libcudart.so", "libcublas.so", "libcublasLt.so")
"""The CUDA libraries ggml's CUDA library loads at start (by their major-versioned names)."""


def link_runtime(toolkit: Path, library_folder: Path) -> list[str]:
    """Link a toolkit's CUDA runtime and cuBLAS into `library_folder` (llama_cpp/lib, which the built
    libraries search first: their RPATH is $ORIGIN) where the system's loader would not find them,
    as with a toolkit of NVIDIA's wheels in .venv; the names linked."""
    linked = []
    for lib in (toolkit / "lib64", toolkit / "lib"):
        for entry in sorted(lib.glob("lib*.so.*")) if lib.is_dir() else []:
            base = entry.name.split(".so.")[0] + ".so"
            dest = library_folder / entry.name
            if base in RUNTIME and entry.name.count(".") == 2 and not dest.exists():  # libcublas.so.13, once
                os.symlink(os.path.relpath(entry.resolve(), library_folder), dest)
                linked.append(entry.name)
    return linked
