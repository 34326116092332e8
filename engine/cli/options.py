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
