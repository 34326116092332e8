"""A truncated .gguf (issue 38, defect 6a): refused with words a person can act on (the file is
incomplete, the bytes expected and found, download it again), never numpy's "When changing to a
larger dtype, its size must be a divisor ..." or "cannot reshape array"."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from engine import Engine, EngineConfig
from engine.errors import ModelLoadError
from engine.models.estimate import estimate_memory
from engine.models.gguf_header import read_header
from engine.models.sources import bundled_gguf
from tests.engine.gguf_tiny import write_tiny_gguf

BACKENDS = ["torch"] + (["llamacpp"] if importlib.util.find_spec("llama_cpp") else [])


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", bundled_gguf("smollm2-135m-instruct"))


def _cut(source: Path, out: Path, keep: int) -> Path:
    data = source.read_bytes()
    out.write_bytes(data[:keep] if keep > 0 else data[:len(data) + keep])
    return out


@pytest.fixture(params=["tensor data", "header"])
def cut_gguf(request, tiny_gguf, tmp_path) -> tuple[Path, int]:
    """(a copy cut short, the size it should have)."""
    keep = -1000 if request.param == "tensor data" else 200
    return _cut(tiny_gguf, tmp_path / "cut.gguf", keep), tiny_gguf.stat().st_size


@pytest.mark.parametrize("backend", BACKENDS)
def test_loading_a_truncated_gguf_says_it_is_incomplete(cut_gguf, backend, tmp_path, monkeypatch):
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    path, whole = cut_gguf
    with pytest.raises(ModelLoadError, match=r"cut.gguf is truncated \([\d,]+ bytes on disk.*Download it again") as e:
        Engine.load(str(path), EngineConfig(backend=backend, max_context=256))
    assert "dtype" not in str(e.value) and "reshape" not in str(e.value)


def test_the_message_gives_the_bytes_expected_when_the_header_is_whole(tiny_gguf, tmp_path):
    # cut in its tensor data (a file cut inside its header has no known extent: the test above)
    path, whole = _cut(tiny_gguf, tmp_path / "cut.gguf", -1000), tiny_gguf.stat().st_size
    with pytest.raises(ModelLoadError, match=f"{path.stat().st_size:,} bytes on disk, {whole:,} expected"):
        read_header(path)


def test_the_memory_estimate_says_it_too(cut_gguf):
    with pytest.raises(ModelLoadError, match="is truncated"):
        estimate_memory(str(cut_gguf[0]), max_context=256)


def test_whole_files_pass(tiny_gguf):
    read_header(tiny_gguf)
    read_header(bundled_gguf("smollm2-135m-instruct"))  # a real file: its alignment and offsets add up
