"""Options several command lines share (`chat`, `serve`, the app's own)."""

from __future__ import annotations

import argparse
from typing import Optional

GPU_LAYERS_HELP = ("llama.cpp: layers on the GPU, 'auto' (the default: as many as fit beside one session) "
                   "or a number (0: the CPU only)")


def gpu_layers(value: str) -> Optional[int]:
    """argparse type of --gpu-layers: "auto" -> None, "12" -> 12."""
    if value.strip().lower() == "auto":
        return None
    try:
        layers = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not 'auto' or a number of layers") from None
    if layers < 0:
        raise argparse.ArgumentTypeError(f"{value} layers: use 0 or more, or 'auto'")
    return layers


def add_gpu_layers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu-layers", type=gpu_layers, default=None, metavar="auto|N", help=GPU_LAYERS_HELP)


def add_kv_cache(parser: argparse.ArgumentParser) -> None:
    """--cache-type-k / --cache-type-v, named as llama-server names them."""
    from ..kv_cache_type import KV_CACHE_TYPES

    for part, note in (("k", "q8_0 halves the keys' memory at the same speed on the CPU"),
                       ("v", "q8_0 halves the values' memory; long prompts read ~30 %% slower on the CPU")):
        parser.add_argument(f"--cache-type-{part}", choices=list(KV_CACHE_TYPES), default="f16",
                            help=f"llama.cpp: the K/V cache's {'keys' if part == 'k' else 'values'} type "
                                 f"(default f16; {note})")


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def byte_size(value: str) -> int:
    """argparse type of a size on disk: "4G" -> 4 GiB, "500M", "1.5GB", "0"; units K, M, G, T (1024-based)."""
    text = value.strip().lower().replace(",", "").replace("_", "")
    for suffix in ("ib", "b"):
        if text.endswith(suffix) and text[:-len(suffix)][-1:] in "kmgt0123456789":
            text = text[:-len(suffix)]
            break
    unit = text[-1:] if text[-1:] in "kmgt" else ""
    try:
        number = float(text[: len(text) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a size (e.g. 4G, 500M, 0)") from None
    if not number >= 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: a size is 0 or more")
    return int(number * _UNITS[unit])


def add_prefix_cache(parser: argparse.ArgumentParser, default_dir: str) -> None:
    """--prefix-cache-dir and --prefix-cache-size (EngineConfig.prefix_cache_dir, prefix_cache_bytes)."""
    parser.add_argument("--prefix-cache-dir", default=default_dir, metavar="DIR",
                        help=f"llama.cpp: keep prompts' K/V on disk here, so a prompt that starts like one seen "
                             f"before (after a restart too) reads that part back instead of computing it; the same "
                             f"tokens either way (default {default_dir})")
    parser.add_argument("--prefix-cache-size", type=byte_size, default=4 << 30, metavar="SIZE",
                        help="most the prompt cache keeps on disk, e.g. 4G or 500M; least recently used prompts "
                             "go first; 0 turns it off (default 4G)")
