"""Fixtures shared by every test: the bundled model folder and tiny random-weight models.

Tiny models are built by the tests themselves (seeded, float32) and reuse the bundled model's real
tokenizer and chat template, so text, stop tokens and templates behave as with a real model.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

# CI and developers get both backends on Linux (MLX through mlx[cpu]); elsewhere, those installed.
if sys.platform.startswith("linux"):
    BACKENDS = ["torch", "mlx"]
else:  # pragma: no cover - exercised on developers' Macs and Windows machines
    import importlib.util

    BACKENDS = [b for b in ("torch", "mlx") if importlib.util.find_spec(b)]

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


TOKENIZER_ONLY = "CONFAB_TEST_TOKENIZER"
"""A folder of the bundled model's tokenizer files alone, for a machine that has no bundled model (a GPU
machine with no network): tiny models take their tokenizer from it, and tests of real text skip."""


HEAD_DIM = int(os.environ.get("CONFAB_TEST_HEAD_DIM", "16"))
"""Width of the tiny models' attention heads (4 heads). 16 keeps them small; CONFAB_TEST_HEAD_DIM=64
gives real models' width, for a GPU run: ggml's Vulkan backend computed 16-wide heads 18-25 logits
off, and the load-time check then puts such a model on the CPU (engine/correctness/gpu_twin.py)."""


@pytest.fixture(scope="session")
def bundled_folder() -> Path:
    """The bundled SmolLM2 converted to a safetensors folder (once per machine, in the user cache)."""
    from engine.models import resolve

    if os.environ.get(TOKENIZER_ONLY):
        pytest.skip(f"{TOKENIZER_ONLY} is set: the bundled model is not on this machine")
    return resolve("bundled:smollm2-135m-instruct").path


@pytest.fixture(scope="session")
def tokenizer_folder(request) -> Path:
    """Where tiny models take their real tokenizer and chat template from."""
    if os.environ.get(TOKENIZER_ONLY):
        return Path(os.environ[TOKENIZER_ONLY])
    return request.getfixturevalue("bundled_folder")


def _build_tiny(kind: str, out: Path, tokenizer_dir: Path, seed: int) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

    width = HEAD_DIM * 4
    common = dict(
        vocab_size=49152, hidden_size=width, intermediate_size=2 * width, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        bos_token_id=1, eos_token_id=2, pad_token_id=2, tie_word_embeddings=False,
        initializer_range=0.5, rms_norm_eps=1e-5,
    )
    # "*-sliding": layer 0 attends over an 8-token window. transformers reads it from a Qwen3 config,
    # mlx-lm from a Llama one (its qwen3 ignores sliding windows, transformers' llama has none).
    sliding = dict(sliding_window=8, layer_types=["sliding_attention", "full_attention"])
    if kind == "llama":
        config = LlamaConfig(**common)
    elif kind == "llama-sliding":
        config = LlamaConfig(**common, **sliding)
    elif kind == "qwen3-sliding":
        config = Qwen3Config(head_dim=HEAD_DIM, use_sliding_window=True, **sliding, **common)
    else:
        config = Qwen3Config(head_dim=HEAD_DIM, **common)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out)
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copy(tokenizer_dir / name, out / name)
    return out


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory, tokenizer_folder) -> dict[str, Path]:
    """Seeded random-weight models of two architectures: {"llama": folder, "qwen3": folder}."""
    root = tmp_path_factory.mktemp("tiny")
    return {kind: _build_tiny(kind, root / kind, tokenizer_folder, seed=i) for i, kind in enumerate(("llama", "qwen3"))}


@pytest.fixture(scope="session")
def tiny_llama_other_seed(tmp_path_factory, tokenizer_folder) -> Path:
    """Same architecture and config as tiny_models["llama"], other weights: a different model."""
    return _build_tiny("llama", tmp_path_factory.mktemp("tiny-other") / "llama", tokenizer_folder, seed=99)


@pytest.fixture(scope="session")
def tiny_sliding_models(tmp_path_factory, tokenizer_folder) -> dict[str, Path]:
    """A seeded model with a sliding-window layer, per backend: {"torch": folder, "mlx": folder}."""
    root = tmp_path_factory.mktemp("tiny-sliding")
    kinds = {"torch": "qwen3-sliding", "mlx": "llama-sliding"}
    return {b: _build_tiny(kind, root / kind, tokenizer_folder, seed=7) for b, kind in kinds.items()}


def _tokenizer_gguf() -> Path:
    """The GGUF whose tokenizer the tiny GGUFs take: the bundled model's, or on a machine without it
    (the GPU proof) its tokenizer fields alone (CONFAB_TEST_VOCAB_GGUF)."""
    from engine.models.sources import bundled_gguf

    vocab = os.environ.get("CONFAB_TEST_VOCAB_GGUF")
    return Path(vocab) if vocab else bundled_gguf("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def tiny_q4_gguf(tmp_path_factory) -> Path:
    """A tiny llama GGUF whose linear layers are 4-bit (Q4_0/Q4_1): the bundled model's formats at a
    size that loads in a second (tests/engine/gguf_tiny.py); written once per test session."""
    from tests.engine.gguf_tiny import write_tiny_gguf

    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny-q4.gguf", _tokenizer_gguf())


@pytest.fixture(scope="session")
def tiny_k_gguf(tmp_path_factory) -> Path:
    """A tiny llama GGUF in Q4_K_M's formats (Q4_K and Q6_K, rows of 256; tests/engine/gguf_tiny.py):
    what most downloaded GGUFs hold; written once per test session."""
    from tests.engine.gguf_tiny import write_tiny_k_gguf

    return write_tiny_k_gguf(tmp_path_factory.mktemp("gguf") / "tiny-k.gguf", _tokenizer_gguf())


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


SHUFFLE = "CONFAB_TEST_SHUFFLE"
"""A seed: run the test files in a shuffled order, and each file's tests shuffled, to show that no
test leans on another having run first (a file's tests stay together so its shared fixtures are
built once, as in the usual order)."""


def shuffled(items: list, seed: str) -> list:
    """`items` with their files in a seeded random order and each file's tests shuffled."""
    import random

    rng = random.Random(seed)
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(str(item.fspath), []).append(item)
    order = list(files)
    rng.shuffle(order)
    out = []
    for name in order:
        tests = files[name]
        rng.shuffle(tests)
        out += tests
    return out


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """CONFAB_TEST_SHUFFLE (a seed) shuffles the order; with TOKENIZER_ONLY set, tests that load
    the bundled model by name skip (it is not there)."""
    if os.environ.get(SHUFFLE):
        items[:] = shuffled(items, os.environ[SHUFFLE])
        config.pluginmanager.get_plugin("terminalreporter").write_line(
            f"{SHUFFLE}={os.environ[SHUFFLE]}: test files and their tests in a shuffled order")
    if not os.environ.get(TOKENIZER_ONLY):
        return
    import inspect

    skip = pytest.mark.skip(reason=f"{TOKENIZER_ONLY} is set: the bundled model is not on this machine")
    for item in items:
        functions = [getattr(item, "function", None)]
        info = getattr(item, "_fixtureinfo", None)
        if info is not None:  # a test module's own fixtures that load it too (the shared ones load it lazily)
            functions += [d.func for defs in info.name2fixturedefs.values() for d in defs
                          if not d.func.__module__.endswith("conftest")]
        if any(f is not None and ("bundled:" in (src := inspect.getsource(f)) or "bundled_gguf(" in src) for f in functions):
            item.add_marker(skip)


def pytest_configure(config):
    # Quiet library chatter in test output; errors still surface.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Converted models (the bundled GGUF as a folder) live in the user cache, found through HOME. Tests
    # that give the app an empty HOME would convert the bundled model again (20 s each): they share the
    # real cache instead; a test about the cache itself sets CONFAB_CACHE to its own folder.
    if "CONFAB_CACHE" not in os.environ:
        from engine.models.sources import cache_dir

        os.environ["CONFAB_CACHE"] = str(cache_dir())
