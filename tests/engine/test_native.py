"""engine.llama_library(): whether llama.cpp's library loads here, what it was built with, and why not."""

from __future__ import annotations

import sys

from engine import llama_library
from engine.backends.native import backends_in

CPU_INFO = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | "
            "LLAMAFILE = 1 | REPACK = 1 | ")
CUDA_INFO = "CUDA : ARCHS = 890 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | " + CPU_INFO


def test_backends_are_read_from_the_system_info():
    assert backends_in(CPU_INFO) == ("CPU",)
    assert backends_in(CUDA_INFO) == ("CUDA", "CPU")
    assert backends_in("") == ()


def test_the_installed_library_loads_and_says_its_build():
    found = llama_library()
    assert found.available, found.detail
    assert found.detail.startswith("llama-cpp-python 0.3.16 (") and "CPU" in found.backends


def test_a_missing_library_is_a_reason_not_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails as where it did not build
    found = llama_library()
    assert not found.available and not found.gpu_offload
    assert found.detail.startswith("ModuleNotFoundError: import of llama_cpp halted")
