"""Random-weight vision models (SmolVLM / Idefics3 shaped), written as a GGUF and its mmproj file by
llama.cpp's own converter, so the image tests and `bench --vision` run on what real vision GGUFs are,
with no download. A developer's tool: it needs transformers and the pinned llama.cpp sources.

Seeded, float32, the bundled model's real tokenizer (plus the image tokens SmolVLM adds). Written once
per machine into the user cache (keyed by this file and the converter's sources), like the bundled
model's converted folder: building and converting it takes tens of seconds on two cores.

    folder = tiny_vision_model(tokenizer_folder)   # -> folder with model.gguf and mmproj-model.gguf
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
IMAGE_TOKENS = ("<fake_token_around_image>", "<image>", "<global-img>")
"""What SmolVLM's tokenizer adds and llama.cpp's Idefics3 projector writes around an image."""
TINY = dict(text=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2),
            vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                        image_size=64, patch_size=8),
            scale_factor=2)
"""64×64 pixels in 8×8 patches, merged 2×2: 16 image tokens."""
SMOLVLM_256M = dict(text=dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                              num_key_value_heads=3),
                    vision=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                                image_size=512, patch_size=16),
                    scale_factor=4)
"""SmolVLM-256M-Instruct's shapes (HuggingFaceTB's config.json): a 512×512 image is 64 tokens."""


def converter() -> Path:
    """llama.cpp's convert_hf_to_gguf.py from the pinned llama-cpp-python sources (packaging/llama_tools.py
    unpacks them once; the same sources the installed llama.cpp was built from)."""
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        import llama_tools
    finally:
        sys.path.pop(0)
    return llama_tools.sources(ROOT / "build" / "llama-tools") / "vendor" / "llama.cpp" / "convert_hf_to_gguf.py"


_RUN_CONVERTER = """
import runpy, sys, types
import transformers  # noqa: F401 - before the stand-ins below, which it would take for the real package
# The converter imports mistral_common at the top for Mistral's own checkpoint format only; these HF
# folders never reach it, and it is no dependency of Confab's: empty stand-ins let the script start.
names = {"base": ["TokenizerVersion"], "multimodal": ["DATASET_MEAN", "DATASET_STD"], "tekken": ["Tekkenizer"],
         "sentencepiece": ["SentencePieceTokenizer"]}
for package in ("mistral_common", "mistral_common.tokens", "mistral_common.tokens.tokenizers"):
    sys.modules.setdefault(package, types.ModuleType(package))
for leaf, attrs in names.items():
    module = types.ModuleType(f"mistral_common.tokens.tokenizers.{leaf}")
    for attr in attrs:
        setattr(module, attr, None)
    sys.modules.setdefault(module.__name__, module)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
"""Runs convert_hf_to_gguf.py (argv[1]) with its other arguments."""


def tiny_vision_model(tokenizer_folder: Path, shape: dict = TINY, seed: int = 0, outtype: str = "f32") -> Path:
    """A folder holding `model.gguf` and `mmproj-model.gguf` (built once, then read from the cache)."""
    import inspect

    from engine.models.cache_lock import building
    from engine.models.sources import cache_dir

    script = converter()
    key = hashlib.sha256(inspect.getsource(_build_hf).encode() + _RUN_CONVERTER.encode() + script.read_bytes()
                         + json.dumps([shape, seed, outtype], sort_keys=True).encode()
                         + (Path(tokenizer_folder) / "tokenizer.json").read_bytes()).hexdigest()[:16]
    out = cache_dir() / "test-models" / f"vision-{key}"
    if not (out / "mmproj-model.gguf").exists():
        with building(out):  # two test workers may both miss it: one builds, the other waits
            if not (out / "mmproj-model.gguf").exists():
                _write(out, Path(tokenizer_folder), shape, seed, outtype, script)
    return out


def _write(out: Path, tokenizer_folder: Path, shape: dict, seed: int, outtype: str, script: Path) -> None:
    work = out.with_name(out.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    hf = _build_hf(work / "hf", tokenizer_folder, shape, seed)
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}  # the converter's own gguf-py
    for extra in ([], ["--mmproj"]):
        subprocess.run([sys.executable, "-c", _RUN_CONVERTER, str(script), str(hf), "--outfile",
                        str(work / "model.gguf"), "--outtype", outtype, *extra], check=True, env=env, capture_output=True)
    shutil.rmtree(hf)
    shutil.rmtree(out, ignore_errors=True)
    work.rename(out)


def _build_hf(out: Path, tokenizer_folder: Path, shape: dict, seed: int) -> Path:
    import torch
    from transformers import AutoTokenizer, Idefics3Config, Idefics3ForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    tokenizer.add_special_tokens({"additional_special_tokens": list(IMAGE_TOKENS)})
    text = dict(shape["text"], vocab_size=len(tokenizer), max_position_embeddings=4096, bos_token_id=1,
                eos_token_id=2, pad_token_id=2, tie_word_embeddings=False, initializer_range=0.5, rms_norm_eps=1e-5,
                model_type="llama", architectures=["LlamaForCausalLM"])
    config = Idefics3Config(text_config=text, vision_config=dict(shape["vision"], initializer_range=0.5),
                            scale_factor=shape["scale_factor"],
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    config.initializer_range = 0.5
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).to(torch.float32)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    template = tokenizer_folder / "chat_template.jinja"
    if template.exists():
        shutil.copy(template, out / "chat_template.jinja")
    (out / "preprocessor_config.json").write_text(json.dumps({"image_mean": [0.5] * 3, "image_std": [0.5] * 3}))
    return out


def png(width: int, height: int, seed: int = 0) -> bytes:
    """A valid RGB PNG of seeded random pixels, written by hand (Pillow is no dependency)."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _png_chunk(b"IDAT", zlib.compress(raw)) + _png_chunk(b"IEND", b""))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
