"""Which dtype "auto" means for torch on this machine, and why.

bfloat16 halves memory and is the fast path only where the hardware computes in it: CUDA GPUs of
compute capability 8.0 and later, and CPUs with AVX512-BF16 or AMX. Elsewhere a bf16 matmul is
emulated: on a 2-core AVX2 CPU prefill ran ~46–90 tok/s in bfloat16 against ~590 in float32. Older
CUDA GPUs get float16 (their tensor cores), other CPUs float32. The CPU facts come from torch's own
capability checks (the same ones its kernels dispatch on), never from parsing /proc/cpuinfo.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class DtypeChoice:
    """A dtype and the one-line reason it was chosen (shown by the CLI, bench and status bar)."""

    dtype: str
    """"float32", "bfloat16" or "float16"."""
    reason: str
    """e.g. "float32: this CPU has no native bfloat16 (AVX2)"."""


def choose_dtype(device: str, asked: str = "auto") -> DtypeChoice:
    """The dtype to load in on `device` ("cuda" or "cpu"): `asked` unless it is "auto"."""
    if asked != "auto":
        return DtypeChoice(asked, f"{asked}: as configured")
    return _cuda_choice() if device == "cuda" else _cpu_choice()


def auto_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=None)
def _cpu_choice() -> DtypeChoice:
    import torch

    capability = torch.backends.cpu.get_cpu_capability()  # "AVX2", "AVX512", "DEFAULT", ...
    if _cpu_check("_is_amx_tile_supported"):
        return DtypeChoice("bfloat16", f"bfloat16: this CPU has AMX ({capability})")
    if _cpu_check("_is_avx512_bf16_supported"):
        return DtypeChoice("bfloat16", f"bfloat16: this CPU has AVX512-BF16 ({capability})")
    return DtypeChoice("float32", f"float32: this CPU has no native bfloat16 ({capability})")


def _cpu_check(name: str) -> bool:
    """torch.cpu's private capability probe `name`, False where this torch build lacks it."""
    import torch

    probe = getattr(torch.cpu, name, None) or getattr(torch._C._cpu, name, None)
    try:
        return bool(probe()) if probe is not None else False
    except Exception:  # a probe that cannot run on this build says nothing: assume no
        return False


@functools.lru_cache(maxsize=None)
def _cuda_choice() -> DtypeChoice:
    import torch

    major, minor = torch.cuda.get_device_capability()
    name = torch.cuda.get_device_name()
    if major >= 8:
        return DtypeChoice("bfloat16", f"bfloat16: {name} (compute capability {major}.{minor}) has native bfloat16")
    return DtypeChoice("float16", f"float16: {name} (compute capability {major}.{minor}) has no native bfloat16")
