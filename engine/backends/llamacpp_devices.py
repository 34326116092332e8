"""The GPUs llama.cpp's build sees, with their free memory, asked of ggml itself.

    for device in gpu_devices():
        print(device.backend, device.description, device.free >> 20, "MiB free")

llama-cpp-python 0.3.16 binds llama.cpp's API but not ggml's device registry, so these few functions
(`ggml_backend_dev_*`, stable since ggml's backend registry of late 2024) are called through ctypes on
the library it ships, as llamacpp_threads.py does for the thread pool. The same answer serves every
GPU backend (CUDA, Vulkan, Metal): the free memory is what the backend reports (cudaMemGetInfo on
CUDA), after this process's own context, which is what a model and its K/V pool can still take.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import llama_cpp as lc

log = logging.getLogger(__name__)

GPU_TYPES = {1: "GPU", 2: "ACCEL"}
"""ggml_backend_dev_type values that are not the CPU (ggml-backend.h: CPU 0, GPU 1, ACCEL 2). ACCEL
devices (BLAS, AMX) compute beside the CPU and hold no layers: only GPU devices are offloaded to."""


@dataclass(frozen=True)
class Device:
    """One device of llama.cpp's build."""

    name: str
    """ggml's name: "CUDA0", "Vulkan0", "Metal"."""
    description: str
    """The card: "NVIDIA GeForce RTX 4070"."""
    backend: str
    """The backend that drives it: "CUDA", "Vulkan", "Metal"."""
    free: int
    total: int


def library_folder() -> Path:
    """Where llama-cpp-python loads its libraries from (LLAMA_CPP_LIB_PATH overrides, as in llama_cpp)."""
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    return Path(override) if override else Path(lc.__file__).parent / "lib"


def _ggml() -> Optional[ctypes.CDLL]:
    names = {"win32": "ggml.dll", "darwin": "libggml.dylib"}
    path = library_folder() / names.get(sys.platform, "libggml.so")
    if not path.is_file():
        return None
    lib = ctypes.CDLL(str(path))
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_dev_get.restype = ctypes.c_void_p
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    for name in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
        getattr(lib, name).restype = ctypes.c_char_p
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_type.restype = ctypes.c_int
    lib.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                                            ctypes.POINTER(ctypes.c_size_t)]
    lib.ggml_backend_dev_backend_reg.restype = ctypes.c_void_p
    lib.ggml_backend_dev_backend_reg.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_reg_name.restype = ctypes.c_char_p
    lib.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
    return lib


def gpu_devices() -> list[Device]:
    """The GPUs llama.cpp can offload layers to, in its order (CUDA0 first); [] on a CPU build, or
    where the build's GPU backend found no device (no driver, say). Never raises."""
    try:
        lib = _ggml()
        if lib is None:
            return []
        devices = []
        for i in range(lib.ggml_backend_dev_count()):
            dev = lib.ggml_backend_dev_get(i)
            if GPU_TYPES.get(lib.ggml_backend_dev_type(dev)) != "GPU":
                continue
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
            reg = lib.ggml_backend_dev_backend_reg(dev)
            devices.append(Device(_text(lib.ggml_backend_dev_name(dev)), _text(lib.ggml_backend_dev_description(dev)),
                                  _text(lib.ggml_backend_reg_name(reg)) if reg else "", free.value, total.value))
        return devices
    except (OSError, AttributeError) as e:
        log.debug("could not list llama.cpp's devices (%s)", e)
        return []


def _text(value: Optional[bytes]) -> str:
    return value.decode(errors="replace") if value else ""


def short_card_name(description: str) -> str:
    """A card's name as a status bar has room for: "NVIDIA GeForce RTX 4070" -> "RTX 4070"."""
    for prefix in ("NVIDIA GeForce ", "NVIDIA ", "AMD Radeon ", "Intel(R) ", "Apple "):
        if description.startswith(prefix) and len(description) > len(prefix):
            return description[len(prefix):]
    return description
