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
