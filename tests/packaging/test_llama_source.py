"""packaging/llama_source.py: Confab's changes to the vendored llama.cpp, applied to an unpacked sdist.
The real sdist is patched by every llama.cpp build (bootstrap.py fails the build when a patch's text is
not there); here a stand-in tree holds the text each patch was written against."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

import bootstrap  # noqa: F401 - puts packaging/ on sys.path
import llama_source


def sdist_tree(root: Path, text_of=lambda patch: f"// before\n{patch.old}// after\n") -> Path:
    src = root / "llama_cpp_python-0.3.16"
    for patch in llama_source.PATCHES:
        path = llama_source.vendored(src) / patch.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text_of(patch))
    return src


def _is_patched(src: Path) -> bool:
    """Whether every patch's new text is in the unpacked sdist at `src`, once."""
    return all((llama_source.vendored(src) / p.path).read_text(encoding="utf-8").count(p.new) == 1
               for p in llama_source.PATCHES)


def test_patches_apply_once_and_again_changes_nothing(tmp_path):
    src = sdist_tree(tmp_path)
    assert not _is_patched(src)
    llama_source.apply(src)
    assert _is_patched(src)
    path = llama_source.vendored(src) / llama_source.SKIP_MASKED_RUNS.path
    once = path.read_text()
    assert once.startswith("// before\n") and once.endswith("// after\n")
    assert "0xFC00FC00FC00FC00ull" in once
    llama_source.apply(src)
    assert path.read_text() == once


def test_another_llama_cpp_fails_loudly_rather_than_building_unpatched(tmp_path):
    src = sdist_tree(tmp_path, text_of=lambda patch: patch.old.replace("nek1", "n_kv"))
    with pytest.raises(RuntimeError, match="written for another llama.cpp"):
        llama_source.apply(src)


def test_the_masked_run_skip_leaves_the_original_check_in_place():
    """Cells the skip does not take still go through llama.cpp's own -inf check (same cells skipped)."""
    patch = llama_source.SKIP_MASKED_RUNS
    assert patch.new.endswith(patch.old.split("\n", 1)[1])
    assert patch.new.startswith(patch.old.split("\n", 1)[0])


def test_unpack_gives_the_one_source_folder(tmp_path):
    src = sdist_tree(tmp_path / "made")
    tarball = tmp_path / "llama_cpp_python-0.3.16.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(src, arcname=src.name)
    unpacked = llama_source.unpack(tarball, tmp_path / "out")
    assert unpacked == tmp_path / "out" / src.name
    llama_source.apply(unpacked)
    assert _is_patched(unpacked)
