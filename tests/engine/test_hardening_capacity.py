"""Capacity that binds: the budget caps max_sessions, a useless budget or context is refused or clamped."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from engine import Engine, EngineConfig
from engine.capacity import bytes_per_session
from engine.errors import CapacityError, ModelLoadError
from tests.conftest import HEAD_DIM

# The tiny llama's state at max_context=64, float32: K/V grow in 256-token chunks, so 64 rounds up to 256.
PER_SESSION_64 = 2 * 2 * HEAD_DIM * 2 * 4 * 256


def _copy_with_config(src, dst, **changes):
    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    config.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        config.pop(key)
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_the_budget_caps_a_configured_max_sessions(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, max_context=64, max_sessions=8,
                         memory_budget=2 * PER_SESSION_64)
    assert engine.capacity().max_sessions == 2
    a, b = engine.open_session(), engine.open_session()
    with pytest.raises(CapacityError, match="2 of 2 open"):
        engine.open_session()
    a.close()
    b.close()


def test_a_budget_that_cannot_hold_one_session_is_refused_at_load(tiny_models, backend):
    with pytest.raises(CapacityError, match=r"memory budget \(1\.0 KiB\) cannot hold one session \(128\.0 KiB"):
        Engine.load(str(tiny_models["llama"]),
                    EngineConfig(backend=backend, dtype="float32", max_context=64, memory_budget=1024))


def test_max_context_above_the_models_limit_is_clamped_with_a_message(tmp_path, tiny_models, backend, make_engine, caplog):
    folder = _copy_with_config(tiny_models["llama"], tmp_path / "short", max_position_embeddings=512)
    with caplog.at_level(logging.WARNING, logger="engine"):
        engine = make_engine(folder, backend, max_context=10**7)
    assert engine.config.max_context == 512
    assert "max_context 10000000 is above short's limit of 512 tokens" in caplog.text
    config = json.loads((folder / "config.json").read_text())
    assert engine.capacity().bytes_per_session == bytes_per_session(config, "float32", 512)


def test_an_unsupported_model_family_is_refused_by_name(tmp_path, tiny_models, backend):
    gpt2 = dict(model_type="gpt2", architectures=["GPT2LMHeadModel"], n_layer=2, n_head=4, n_embd=64,
                num_hidden_layers=None, num_attention_heads=None, hidden_size=None)
    folder = _copy_with_config(tiny_models["llama"], tmp_path / "gpt2", **gpt2)
    with pytest.raises(ModelLoadError, match="unsupported model family 'gpt2'.*num_hidden_layers"):
        Engine.load(str(folder), EngineConfig(backend=backend, dtype="float32"))
