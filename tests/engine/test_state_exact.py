"""Saved states restore exactly for every cache kind, and are refused by their metadata before any tensor is read."""

from __future__ import annotations

import pytest

from engine import SamplingParams
from engine.errors import StateFileError
from tests.engine.helpers import prompt_ids, token_ids

PARAMS = SamplingParams(temperature=0, max_tokens=24, ignore_stop=True)
LONG = SamplingParams(temperature=0, max_tokens=60, ignore_stop=True)


def _save_and_follow(engine, path, params=LONG):
    """Generate past the sliding window, save, then continue: (tokens held, follow-up, its tokens)."""
    with engine.open_session() as original:
        token_ids(original.generate(prompt_ids(engine, "Once upon a time there was"), params))
        original.save_state(path)
        tokens = original.tokens
        follow_up = tokens + prompt_ids(engine, " and then")
        return tokens, follow_up, token_ids(original.generate(follow_up, PARAMS))


def test_sliding_window_state_restores_exactly(make_engine, tiny_sliding_models, backend, tmp_path):
    engine = make_engine(tiny_sliding_models[backend], backend)
    path = tmp_path / "sliding.state"
    tokens, follow_up, expected = _save_and_follow(engine, path)
    assert len(tokens) > 60  # far past the 8-token window
    with engine.open_session(restore_from=path) as restored:
        assert restored.tokens == tokens
        chunks = list(restored.generate(follow_up, PARAMS))
        assert [t for c in chunks for t in c.token_ids] == expected
        assert chunks[-1].stats.prefilled_tokens == len(follow_up) - len(tokens) + 1  # warm, not re-prefilled


def test_restored_full_attention_state_spans_chunks(make_engine, tiny_models, backend, tmp_path):
    """A state longer than one 256-token buffer chunk round-trips and continues like the original."""
    engine = make_engine(tiny_models["llama"], backend)
    path = tmp_path / "long.state"
    tokens, follow_up, expected = _save_and_follow(engine, path, SamplingParams(temperature=0, max_tokens=280, ignore_stop=True))
    assert len(tokens) > 256
    with engine.open_session(restore_from=path) as restored:
        assert restored.tokens == tokens
        assert token_ids(restored.generate(follow_up, PARAMS)) == expected


def test_state_longer_than_max_context_is_refused(make_engine, tiny_models, backend, tmp_path):
    path = tmp_path / "a.state"
    _save_and_follow(make_engine(tiny_models["llama"], backend), path, PARAMS)
    small = make_engine(tiny_models["llama"], backend, max_context=16)
    with pytest.raises(StateFileError, match="more than this engine's max_context"):
        small.open_session(restore_from=path)
    assert small.capacity().live_sessions == 0


def test_foreign_state_is_refused_before_its_tensors_are_read(
    make_engine, tiny_models, tiny_llama_other_seed, backend, tmp_path, monkeypatch
):
    path = tmp_path / "x.state"
    _save_and_follow(make_engine(tiny_models["llama"], backend), path, PARAMS)
    other = make_engine(tiny_llama_other_seed, backend)

    def load_state(p):
        raise AssertionError("tensors were read before the metadata was checked")

    monkeypatch.setattr(other._worker.backend, "load_state", load_state)
    with pytest.raises(StateFileError, match="was saved from another model"):
        other.open_session(restore_from=path)


def test_torch_state_with_another_layer_count_is_refused_by_name(make_engine, tiny_models, tmp_path):
    """Same fingerprint, 30 layers in the file, 2 in the model: a StateFileError, not an IndexError."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    engine = make_engine(tiny_models["llama"], "torch")
    path = tmp_path / "a.state"
    _save_and_follow(engine, path, PARAMS)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    for i in range(2, 30):
        tensors[f"{i}.keys"], tensors[f"{i}.values"] = tensors["0.keys"].clone(), tensors["0.values"].clone()
    save_file(tensors, str(path), metadata=dict(meta, layers="30"))
    with pytest.raises(StateFileError, match="holds 30 layers; this model has 2"):
        engine.open_session(restore_from=path)


def test_torch_recurrent_state_save_is_refused_by_name(make_engine, tiny_models, tmp_path):
    """Linear-attention (recurrent) layers have no test model to prove a round trip: saving them is refused."""
    from transformers.cache_utils import DynamicCache, LinearAttentionLayer

    backend = make_engine(tiny_models["llama"], "torch")._worker.backend
    cache = DynamicCache()
    cache.layers = [LinearAttentionLayer()]
    with pytest.raises(StateFileError, match="LinearAttentionLayer state cannot be saved"):
        backend.save_state(cache, tmp_path / "r.state", {})


def test_mlx_state_is_refused_by_torch_by_name(make_engine, tiny_models, tmp_path):
    """mlx-lm nests the engine's metadata one level down; it is still read before any tensor."""
    path = tmp_path / "m.state"
    _save_and_follow(make_engine(tiny_models["llama"], "mlx"), path, PARAMS)
    with pytest.raises(StateFileError, match="saved by the mlx backend; this engine runs torch"):
        make_engine(tiny_models["llama"], "torch").open_session(restore_from=path)
