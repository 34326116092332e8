"""llama-cpp-python's pinned sdist with Confab's changes to the llama.cpp it vendors: every build of the
library (bootstrap.py, the installers' build_llama.py, llama_tools.py, the GPU proof) builds this
source, not the published one. What the changes are, and why: packaging/llama_patches.py.

Only the standard library: bootstrap.py runs this before anything is installed.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

from llama_patches import PATCH_ID, PATCHES, Patch  # noqa: F401 - PATCH_ID: what builds record


def vendored(src: Path) -> Path:
    """The llama.cpp inside an unpacked llama-cpp-python sdist."""
    return src / "vendor" / "llama.cpp"


def apply(src: Path, patches: tuple[Patch, ...] = PATCHES) -> None:
    """Apply `patches` to the unpacked sdist at `src`; those already applied are left alone.
    RuntimeError when a patch's text is not there (another llama.cpp than the one it was written for)."""
    for patch in patches:
        path = vendored(src) / patch.path
        text = path.read_text(encoding="utf-8")
        if text.count(patch.new) == 1:
            continue
        if text.count(patch.old) != 1:
            raise RuntimeError(f"{path}: the text Confab's patch replaces is not there once; "
                               "packaging/llama_source.py was written for another llama.cpp")
        path.write_text(text.replace(patch.old, patch.new), encoding="utf-8", newline="\n")


def download(requirement: str, folder: Path, python: str = sys.executable) -> Path:
    """The sdist of `requirement` (e.g. llama-cpp-python==0.3.16) downloaded into `folder` with pip,
    which keeps the user's index and proxy settings; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([python, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", ":all:", requirement, "-d", str(folder)], check=True)
    return max(folder.glob("llama_cpp_python-*.tar.gz"), key=lambda p: p.stat().st_mtime)


def unpack(tarball: Path, folder: Path) -> Path:
    """`tarball` unpacked into `folder`; the source directory."""
    with tarfile.open(tarball) as tar:
        top = {m.name.split("/")[0] for m in tar.getmembers()}
        if len(top) != 1:
            raise RuntimeError(f"{tarball}: not one source directory inside")
        if sys.version_info >= (3, 12):
            tar.extractall(folder, filter="data")
        else:
            tar.extractall(folder)
    return folder / top.pop()


def patched_source(requirement: str, folder: Path, python: str = sys.executable) -> Path:
    """`requirement`'s sdist downloaded, unpacked and patched in `folder`: what pip builds."""
    src = unpack(download(requirement, folder, python), folder)
    apply(src)
    return src
