"""Random-weight vision models (SmolVLM / Idefics3 shaped, and Qwen2-VL shaped, whose images take
M-RoPE positions), written as a GGUF and its mmproj file by llama.cpp's own converter, so the image
tests and `bench --vision` run on what real vision GGUFs are, with no download. A developer's tool: it
needs transformers and the pinned llama.cpp sources.

Seeded, float32, the bundled model's real tokenizer (plus the image tokens SmolVLM adds). Written once
per machine into the user cache (keyed by this file and the converter's sources), like the bundled
model's converted folder: building and converting it takes tens of seconds on two cores.

    folder = tiny_vision_model(tokenizer_folder)   # -> folder with model.gguf and mmproj-model.gguf
    folder = tiny_vision_model(tokenizer_folder, TINY_QWEN2VL, family="qwen2vl")
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
QWEN2VL_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>")
"""What Qwen2-VL's tokenizer has and llama.cpp's Qwen2-VL projector writes around an image."""
TINY_QWEN2VL = dict(text=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2),
                    vision=dict(depth=3, embed_dim=32, num_heads=2, mlp_ratio=2, patch_size=8, spatial_merge_size=2,
                                temporal_patch_size=2),
                    mrope_section=[2, 3, 3])
"""Heads of 16: M-RoPE's 8 rotary pairs in sections of 2, 3, 3 (temporal, rows, columns). Images keep
their size, rounded up to 16 pixels, in 8×8 patches merged 2×2: 64×64 pixels are 4×4 = 16 tokens. Three
vision blocks: the converter maps a block's index into the projector's tensors (`mm.2`) only below
the block count."""


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
_RUN_QWEN2VL_CONVERTER = _RUN_CONVERTER.replace('runpy.run_path(sys.argv[0], run_name="__main__")', """
# transformers 5 writes M-RoPE's sections under rope_parameters; this converter reads rope_scaling
script = types.ModuleType("convert_hf_to_gguf")
script.__file__ = sys.argv[0]
sys.modules[script.__name__] = script
exec(compile(open(sys.argv[0], encoding="utf-8").read(), sys.argv[0], "exec"), script.__dict__)
base, load = script.ModelBase, script.ModelBase.load_hparams
def load_hparams(dir_model, is_mistral_format):
    config = load(dir_model, is_mistral_format)
    text = config.get("text_config") or config
    rope = text.get("rope_parameters") or {}
    if "mrope_section" in rope:
        text.setdefault("rope_scaling", dict(rope))
        text.setdefault("rope_theta", rope.get("rope_theta"))
    return config
base.load_hparams = staticmethod(load_hparams)
script.main()
""")
"""The same, where the converter reads Qwen2-VL's config in transformers 4's layout."""


def tiny_vision_model(tokenizer_folder: Path, shape: dict = TINY, seed: int = 0, outtype: str = "f32",
                      family: str = "smolvlm") -> Path:
    """A folder holding `model.gguf` and `mmproj-model.gguf` (built once, then read from the cache);
    `family` "smolvlm" (with TINY's or SMOLVLM_256M's shapes) or "qwen2vl" (TINY_QWEN2VL's)."""
    import inspect

    from engine.models.cache_lock import build_once
    from engine.models.sources import cache_dir

    build, runner, name = ((_build_hf, _RUN_CONVERTER, "vision") if family == "smolvlm" else
                           (_build_qwen2vl, _RUN_QWEN2VL_CONVERTER, "qwen2vl"))
    script = converter()
    key = hashlib.sha256(inspect.getsource(build).encode() + runner.encode() + script.read_bytes()
                         + json.dumps([shape, seed, outtype], sort_keys=True).encode()
                         + (Path(tokenizer_folder) / "tokenizer.json").read_bytes()).hexdigest()[:16]
    out = cache_dir() / "test-models" / f"{name}-{key}"
    # two test workers may both miss it: one builds, the other waits
    build_once(out, (out / "mmproj-model.gguf").exists,
               lambda: _write(out, Path(tokenizer_folder), shape, seed, outtype, script, build, runner))
    return out


def _write(out: Path, tokenizer_folder: Path, shape: dict, seed: int, outtype: str, script: Path,
           build, runner: str) -> None:
    work = out.with_name(out.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    hf = build(work / "hf", tokenizer_folder, shape, seed)
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}  # the converter's own gguf-py
    for extra in ([], ["--mmproj"]):
        subprocess.run([sys.executable, "-c", runner, str(script), str(hf), "--outfile",
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


def _build_qwen2vl(out: Path, tokenizer_folder: Path, shape: dict, seed: int) -> Path:
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer, Qwen2VLConfig, Qwen2VLForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    tokenizer.add_special_tokens({"additional_special_tokens": list(QWEN2VL_TOKENS)})
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in QWEN2VL_TOKENS}
    text = dict(shape["text"], vocab_size=len(tokenizer), max_position_embeddings=4096, bos_token_id=1,
                eos_token_id=2, pad_token_id=2, initializer_range=0.5, rms_norm_eps=1e-5,
                rope_parameters=dict(rope_type="default", rope_theta=10000.0, mrope_section=shape["mrope_section"]))
    vision = dict(shape["vision"], hidden_size=shape["text"]["hidden_size"], initializer_range=0.5)
    config = Qwen2VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=False,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|image_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    config.initializer_range = 0.5
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config).to(torch.float32)
    model.save_pretrained(out)
    # transformers 5 saves its own names (model.language_model.*, model.visual.*); the converter reads
    # the checkpoints' (model.*, visual.*)
    for file in out.glob("*.safetensors"):
        tensors = load_file(file)
        save_file({_legacy_name(k): v.contiguous() for k, v in tensors.items()}, file, metadata={"format": "pt"})
    index = out / "model.safetensors.index.json"
    if index.exists():
        data = json.loads(index.read_text())
        data["weight_map"] = {_legacy_name(k): v for k, v in data["weight_map"].items()}
        index.write_text(json.dumps(data))
    tokenizer.save_pretrained(out)
    template = tokenizer_folder / "chat_template.jinja"
    if template.exists():
        shutil.copy(template, out / "chat_template.jinja")
    (out / "preprocessor_config.json").write_text(json.dumps({"image_mean": [0.5] * 3, "image_std": [0.5] * 3}))
    return out


def _legacy_name(key: str) -> str:
    for new, old in (("model.language_model.", "model."), ("model.visual.", "visual.")):
        if key.startswith(new):
            return old + key[len(new):]
    return key


def png(width: int, height: int, seed: int = 0) -> bytes:
    """A valid RGB PNG of seeded random pixels, written by hand (Pillow is no dependency)."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _png_chunk(b"IDAT", zlib.compress(raw)) + _png_chunk(b"IEND", b""))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
