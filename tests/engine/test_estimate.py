"""A memory estimate read from headers matches what a loaded engine reports."""

from __future__ import annotations

import json

import pytest

from engine import estimate_memory
from engine.capacity import bytes_per_session
from engine.errors import InvalidRequestError, ModelLoadError
from engine.models.estimate import auto_dtype


@pytest.mark.parametrize("kind", ["llama", "qwen3"])
def test_estimate_matches_loaded_engine(make_engine, tiny_models, backend, kind):
    engine = make_engine(tiny_models[kind], backend, dtype="auto", max_context=2048)
    real = engine.capacity()
    est = estimate_memory(str(tiny_models[kind]), max_context=2048, dtype=engine.dtype)
    assert est.bytes_per_session == real.bytes_per_session
    assert est.weights_bytes == pytest.approx(real.weights_bytes, rel=0.03)
    assert est.max_context == 2048


def test_auto_dtype_is_what_the_default_backend_loads(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "auto", dtype="auto")
    assert auto_dtype() == engine.dtype
    est = estimate_memory(str(tiny_models["llama"]), max_context=1024)
    assert est.weights_bytes == pytest.approx(engine.capacity().weights_bytes, rel=0.03)


def test_bundled_gguf_estimate_matches_its_converted_folder(bundled_folder):
    from_gguf = estimate_memory("bundled:smollm2-135m-instruct", dtype="float16")
    from_folder = estimate_memory(str(bundled_folder), dtype="float16")
    assert from_gguf.name == "bundled:smollm2-135m-instruct"
    assert from_gguf.weights_bytes == from_folder.weights_bytes
    config = json.loads((bundled_folder / "config.json").read_text())
    assert from_gguf.bytes_per_session == bytes_per_session(config, "float16", 4096)


def test_per_session_scales_with_context_and_dtype(tiny_models):
    src = str(tiny_models["llama"])
    small = estimate_memory(src, max_context=1024, dtype="float32")
    assert estimate_memory(src, max_context=2048, dtype="float32").bytes_per_session == 2 * small.bytes_per_session
    assert estimate_memory(src, max_context=1024, dtype="bfloat16").bytes_per_session * 2 == small.bytes_per_session


def _broken_folder(tmp_path, tiny_models, what):
    folder = tmp_path / "m"
    folder.mkdir()
    src = tiny_models["llama"]
    for f in src.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    if what == "config":
        (folder / "config.json").unlink()
    elif what == "truncated":
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:-1000])
    return folder


@pytest.mark.parametrize(
    "what, message",
    [("config", "config.json is missing"), ("truncated", "truncated")],
)
def test_broken_folders_are_named(tmp_path, tiny_models, what, message):
    with pytest.raises(ModelLoadError, match=message):
        estimate_memory(str(_broken_folder(tmp_path, tiny_models, what)))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "nothing-here", "does not exist"),
        (lambda p: (p / "notes.txt").write_text("hi") and p / "notes.txt", "must be a .gguf"),
        (lambda p: (p / "bad.gguf").write_bytes(b"not a gguf at all") and p / "bad.gguf", "not a readable GGUF"),
    ],
)
def test_bad_sources_raise_model_load_error(tmp_path, make, message):
    with pytest.raises(ModelLoadError, match=message):
        estimate_memory(str(make(tmp_path)))


def test_unknown_bundled_name_and_bad_options():
    with pytest.raises(ModelLoadError, match="unknown bundled model"):
        estimate_memory("bundled:nope")
    with pytest.raises(InvalidRequestError, match="dtype"):
        estimate_memory("bundled:smollm2-135m-instruct", dtype="int3")
    with pytest.raises(InvalidRequestError, match="max_context"):
        estimate_memory("bundled:smollm2-135m-instruct", max_context=1)


def test_a_gguf_estimate_reads_the_same_counts_from_the_header_as_the_full_reader(tiny_q4_gguf):
    """The estimate reads only the GGUF header (the picker shows it in milliseconds, not seconds);
    its tensor counts must be exactly what gguf.GGUFReader's full parse gives."""
    import gguf

    from engine.models.estimate import _gguf_facts
    from engine.models.gguf_int4 import is_int4

    reader = gguf.GGUFReader(str(tiny_q4_gguf))
    stat = tiny_q4_gguf.stat()
    config, elements, int4_elements = _gguf_facts(str(tiny_q4_gguf.resolve()), stat.st_size, stat.st_mtime_ns)
    assert elements == sum(int(t.n_elements) for t in reader.tensors)
    assert int4_elements == sum(int(t.n_elements) for t in reader.tensors if is_int4(t)) > 0
    assert dict(config)["num_hidden_layers"] == int(reader.fields["llama.block_count"].contents())
