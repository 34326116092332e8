"""Model sources: the bundled GGUF converts once, and bad sources fail with a clear ModelLoadError."""

from __future__ import annotations

import shutil

import pytest

from engine import Engine, EngineConfig, SamplingParams
from engine.errors import ModelLoadError
from engine.models import resolve


def test_bundled_model_is_converted_once_and_reused(bundled_folder, monkeypatch):
    def must_not_convert(*args, **kwargs):
        raise AssertionError("converted again")

    import engine.models.sources as r

    monkeypatch.setattr(r, "convert_gguf", must_not_convert)
    again = r.resolve("bundled:smollm2-135m-instruct")
    assert again.path == bundled_folder
    assert (again.path / "model.safetensors").is_file() and (again.path / "tokenizer.json").is_file()


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory, tiny_q4_gguf):
    """(a .gguf outside the bundle, a cache of its own): the backends share the cache, so torch and MLX
    load one conversion of the file, written by whichever of them runs first (alone, each converts).
    A tiny GGUF in the bundled model's 4-bit formats: converting the bundled one takes 20 s."""
    root = tmp_path_factory.mktemp("gguf-path")
    gguf = root / "copy.gguf"
    gguf.symlink_to(tiny_q4_gguf)
    return gguf, root / "cache"


def _converted(cache) -> set:
    return set((cache / "models").iterdir()) if (cache / "models").exists() else set()


def test_gguf_file_path_loads(gguf_path, monkeypatch, backend):
    gguf, cache = gguf_path
    monkeypatch.setenv("CONFAB_CACHE", str(cache))
    before = _converted(cache)
    with Engine.load(str(gguf), EngineConfig(backend=backend, dtype="float32")) as engine:
        if backend == "llamacpp":  # the file as stored: nothing converted
            assert engine.model.path == gguf and _converted(cache) == before
            # 4-bit as the file holds it (dequantized, its 4-bit linears alone would be 8x their bytes)
            assert 0 < engine.capacity().weights_bytes <= gguf.stat().st_size
        else:
            assert engine.model.path.parent == cache / "models"
            assert engine.capacity().weights_bytes > 0


def _write_unsupported_gguf(path):
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "missing", "model not found"),
        (lambda d: (d / "x.bin").write_bytes(b"x") and d / "x.bin", "a model file must be a .gguf"),
        (lambda d: (d / "junk.gguf").write_bytes(b"not gguf at all") and d / "junk.gguf", "is not a readable GGUF file"),
        (lambda d: _write_unsupported_gguf(d / "bert.gguf") or d / "bert.gguf", "GGUF architecture 'bert' is not supported"),
        (lambda d: d, "config.json is missing"),
    ],
)
def test_bad_sources(tmp_path, monkeypatch, make, message):
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    source = make(tmp_path)
    with pytest.raises(ModelLoadError, match=message):
        Engine.load(str(source), EngineConfig(backend="torch"))


def test_truncated_safetensors_is_refused(tiny_models, tmp_path, backend):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_models["llama"], broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ModelLoadError, match="model.safetensors is truncated"):
        Engine.load(str(broken), EngineConfig(backend=backend))


def test_unknown_bundled_name():
    with pytest.raises(ModelLoadError, match="unknown bundled model 'nope'"):
        resolve("bundled:nope")


def test_mlx_community_quantized_folder(tiny_models, tmp_path):
    """A 4-bit MLX folder (as mlx-community ships them) loads with MLX; torch refuses it by name."""
    from mlx_lm import convert

    out = tmp_path / "tiny-4bit"
    convert(str(tiny_models["llama"]), mlx_path=str(out), quantize=True, q_bits=4, q_group_size=32)
    with Engine.load(str(out), EngineConfig(backend="mlx")) as engine:
        with engine.open_session() as s:
            chunks = list(s.generate([5, 6, 7], SamplingParams(temperature=0, max_tokens=8, ignore_stop=True)))
            assert sum(len(c.token_ids) for c in chunks) == 8
    with pytest.raises(ModelLoadError, match="holds MLX-quantized weights; load it with the mlx backend"):
        Engine.load(str(out), EngineConfig(backend="torch"))
