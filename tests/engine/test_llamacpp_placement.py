"""Where a llama.cpp engine runs: the GPUs its build sees, the layers it puts on them, and what it says
when it puts none. On a CPU build (CI) every engine is on the CPU and says why; on a GPU build (the
GPU proof, README) the same tests check the card, the layers and that a model split between the GPU
and the CPU, or on the CPU alone, gives the whole-GPU tokens (within the rounding noted there)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from engine import EngineConfig, InvalidRequestError, SamplingParams, llama_library
from engine.backends.llamacpp_devices import gpu_devices, short_card_name
from engine.cli.options import gpu_layers
from tests.engine.helpers import prompt_ids, token_ids

pytest.importorskip("llama_cpp")
GPU = bool(gpu_devices())
"""This build found a GPU (CUDA, Vulkan, Metal)."""


@pytest.fixture(scope="module")
def gpu_sized(tmp_path_factory, tokenizer_folder, gguf_source) -> Path:
    """A tiny llama whose heads are 64 wide, as real models' are: ggml's Vulkan backend computed the
    16-wide heads of the usual tiny models 18-25 logits off (the load-time check then moves them to
    the CPU, engine/correctness/gpu_twin.py), and 64-wide ones within 0.05 of the CPU."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    out = tmp_path_factory.mktemp("tiny-hd64") / "llama-hd64"
    config = LlamaConfig(vocab_size=49152, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         bos_token_id=1, eos_token_id=2, pad_token_id=2, tie_word_embeddings=False,
                         initializer_range=0.5, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (tokenizer_folder / name).exists():
            shutil.copy(tokenizer_folder / name, out / name)
    return gguf_source(out)


def test_the_devices_listed_are_gpus_with_their_memory():
    devices = gpu_devices()
    assert not devices or llama_library().gpu_offload, "a device listed means a build that offloads"
    for device in devices:
        assert device.backend and device.description and 0 < device.free <= device.total


def test_an_engine_says_where_it_runs(make_engine, gpu_sized):
    engine = make_engine(gpu_sized, "llamacpp")
    if GPU:
        total = engine.placement.split(" · ")[-1]
        assert engine.device in ("cuda", "vulkan", "metal") and total.endswith(" layers")
        layers, of = total.removesuffix(" layers").split("/")
        assert layers == of, f"a tiny model fits whole: {engine.placement}"
        assert engine.placement_reason == f"the whole model fits the GPU ({of}/{of} layers)"
    else:
        assert engine.device == "cpu" and engine.placement == ""
        built = [b for b in llama_library().backends if b != "CPU"]
        expected = (f"this llama.cpp is built for {', '.join(built)} but found no GPU" if built
                    else "this llama.cpp build has no GPU backend")
        assert engine.placement_reason.startswith(expected)


def test_zero_gpu_layers_runs_on_the_cpu(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "llamacpp", gpu_layers=0)
    assert engine.device == "cpu" and engine.placement == ""
    if GPU:
        assert engine.placement_reason.startswith("0/") and engine.placement_reason.endswith("layers on the GPU, as asked")


@pytest.mark.skipif(not GPU, reason="needs a llama.cpp build that finds a GPU (the GPU proof, README)")
def test_a_model_split_between_gpu_and_cpu_gives_the_whole_gpus_tokens(make_engine, gpu_sized):
    prompt = "The quick brown fox jumps over the lazy dog. " * 4
    whole = make_engine(gpu_sized, "llamacpp")
    split = make_engine(gpu_sized, "llamacpp", gpu_layers=1)
    cpu = make_engine(gpu_sized, "llamacpp", gpu_layers=0)
    assert split.placement.endswith(" · 1/3 layers") and cpu.placement == ""
    params = SamplingParams(temperature=0.0, max_tokens=24, ignore_stop=True)
    tokens = []
    for engine in (whole, split, cpu):
        with engine.open_session() as session:
            tokens.append(token_ids(session.generate(prompt_ids(engine, prompt), params)))
    assert tokens[0] == tokens[1] == tokens[2]


def test_gpu_layers_is_checked_where_it_is_given():
    with pytest.raises(InvalidRequestError, match="gpu_layers must be a whole number of layers"):
        EngineConfig(gpu_layers=-1)
    with pytest.raises(InvalidRequestError, match="gpu_layers"):
        EngineConfig(gpu_layers="auto")
    assert gpu_layers("auto") is None and gpu_layers("AUTO") is None and gpu_layers("12") == 12
    for bad in ("-1", "many"):
        with pytest.raises(argparse.ArgumentTypeError):
            gpu_layers(bad)


@pytest.mark.parametrize("description, short", [
    ("NVIDIA GeForce RTX 4070", "RTX 4070"), ("NVIDIA H100 80GB HBM3", "H100 80GB HBM3"),
    ("AMD Radeon RX 7800 XT", "RX 7800 XT"), ("Apple M3 Max", "M3 Max"), ("NVIDIA", "NVIDIA"),
])
def test_a_cards_name_is_shortened_for_the_status_bar(description, short):
    assert short_card_name(description) == short
