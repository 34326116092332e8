"""llama-cpp-python's pinned sdist with Confab's changes to the llama.cpp it vendors: every build of the
library (bootstrap.py, the installers' build_llama.py, llama_tools.py, the GPU proof) builds this
source, not the published one.

Why a change to a library at all: llama.cpp's CPU flash attention walks every cell of the K/V pool
for every row and head, converting and comparing each masked cell's mask value on its own. Confab
keeps all conversations in one shared pool (engine/backends/llamacpp_context.py), so most cells a row
walks past belong to other sessions: 8 sessions of 300 tokens decoded 12 % slower than llama.cpp's
per-sequence streams, and 38 % slower with 6,400 idle cells beside them (2 cores, AMD EPYC, in one
process, steps alternated). Skipping runs of masked cells four at a time brings both to the speed
of the streams (1.00-1.02) and leaves every sum as it was: the cells skipped are exactly the ones
skipped before (-inf is one bit pattern in float16). No release of llama.cpp does this on the CPU.

Only the standard library: bootstrap.py runs this before anything is installed.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Patch:
    """Replace `old` (found exactly once) with `new` in `path`, relative to the vendored llama.cpp."""
    path: str
    old: str
    new: str


SKIP_MASKED_RUNS = Patch(
    "ggml/src/ggml-cpu/ops.cpp",
    old="""        for (int64_t ic = 0; ic < nek1; ++ic) {
            const float mv = mp ? slope*GGML_CPU_FP16_TO_FP32(mp[ic]) : 0.0f;
            if (mv == -INFINITY) {
                continue;
            }
""",
    new="""        for (int64_t ic = 0; ic < nek1; ++ic) {
            if (mp && mp[ic] == 0xFC00) {
                // Confab: a masked cell (-inf is 0xFC00 in f16) starts a run: skip to its end four
                // cells at a time instead of converting each. In a K/V pool shared by many
                // sequences most cells a row walks past are masked; an unmasked cell costs one
                // comparison more. The cells skipped are exactly the ones the check below skips.
                int64_t end = ic + 1;
                while (end + 4 <= nek1) {
                    uint64_t w;
                    memcpy(&w, mp + end, sizeof(w));
                    if (w != 0xFC00FC00FC00FC00ull) {
                        break;
                    }
                    end += 4;
                }
                while (end < nek1 && mp[end] == 0xFC00) {
                    ++end;
                }
                ic = end - 1;
                continue;
            }
            const float mv = mp ? slope*GGML_CPU_FP16_TO_FP32(mp[ic]) : 0.0f;
            if (mv == -INFINITY) {
                continue;
            }
""")

PATCHES: tuple[Patch, ...] = (SKIP_MASKED_RUNS,)
PATCH_ID = hashlib.sha256(repr(PATCHES).encode()).hexdigest()[:12]
"""Changes when the patches do: builds record it, and an installed build without it is rebuilt."""


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
