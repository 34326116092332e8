"""A model folder without its weights (issue 38, defect 5): a Llama config, a tokenizer and a
safetensors holding only `foo.weight` is refused at load with a ModelLoadError that names the
missing tensors, instead of loading random numbers and failing at every reply."""

from __future__ import annotations

import shutil

import pytest

from engine import Engine, EngineConfig
from engine.errors import ModelLoadError
from engine.models.missing_weights import missing_weights_error


@pytest.fixture
def without_weights(tiny_models, tmp_path):
    import torch
    from safetensors.torch import save_file

    folder = tmp_path / "no-weights"
    shutil.copytree(tiny_models["llama"], folder, ignore=shutil.ignore_patterns("*.safetensors"))
    save_file({"foo.weight": torch.zeros(4, 4)}, str(folder / "model.safetensors"))
    return folder


@pytest.mark.parametrize("backend", ["torch", "mlx"])  # the two backends that read folders
def test_a_folder_without_its_weights_is_refused_naming_what_is_missing(without_weights, backend):
    if backend == "mlx":
        pytest.importorskip("mlx_lm")
    with pytest.raises(ModelLoadError) as caught:
        Engine.load(str(without_weights), EngineConfig(backend=backend, dtype="float32", max_context=256))
    message = str(caught.value)
    assert message.startswith("no-weights is missing weights:") and "foo.weight instead" in message
    assert "embed_tokens.weight" in message  # named, not only counted


def test_the_torch_message_counts_the_tensors_and_says_what_the_file_holds(without_weights):
    with pytest.raises(ModelLoadError, match=r"no-weights is missing weights: \d+ tensors") as caught:
        Engine.load(str(without_weights), EngineConfig(backend="torch", dtype="float32", max_context=256))
    assert "foo.weight instead" in str(caught.value) and "download the model again" in str(caught.value)


def test_a_complete_folder_still_loads(tiny_models):
    engine = Engine.load(str(tiny_models["llama"]), EngineConfig(backend="torch", dtype="float32", max_context=256))
    engine.close()


@pytest.mark.parametrize("missing, expected", [
    ([], None),
    (["lm_head.weight"], "1 tensor the model needs is not in"),
    ([f"model.layers.{i}.w" for i in range(7)], "and 2 more"),
])
def test_the_message_in_words(missing, expected):
    error = missing_weights_error("m", missing)
    assert (error is None) if expected is None else expected in str(error)
