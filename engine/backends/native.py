"""Whether llama.cpp's library (llama-cpp-python) loads in this install, and what it was built with.

llama-cpp-python is built from source at set-up, and a machine without a compiler goes on without it
(GGUF then runs on torch), so "is it here" is a question with a reason for its answer. The frozen
app's self-test asks it too: an installer must ship the library and load it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BACKEND = re.compile(r"(?:^|\|)\s*([A-Za-z][\w-]*) : ")


@dataclass(frozen=True)
class LlamaLibrary:
    """What `llama_library()` found."""

    available: bool
    """llama_cpp imported and its native library answered."""
    detail: str
    """The version and build (available), or why it is not (the import's error)."""
    gpu_offload: bool = False
    """Built with a GPU backend (CUDA, Metal, Vulkan…): layers can be offloaded."""
    backends: tuple[str, ...] = ()
    """The ggml backends that report features, from llama.cpp's system info ("CPU", "CUDA", …)."""


def backends_in(system_info: str) -> tuple[str, ...]:
    """Backend names in llama.cpp's system info ("CPU : SSE3 = 1 | AVX = 1 | … CUDA : ARCHS = 890 | …")."""
    return tuple(dict.fromkeys(_BACKEND.findall(system_info)))


def llama_library() -> LlamaLibrary:
    """Import llama_cpp and ask its native library for its build; never raises."""
    try:
        import llama_cpp

        from .llamacpp_library import init_library

        init_library()  # its log callback first: a GPU backend that cannot start says why to it
        info = llama_cpp.llama_print_system_info().decode(errors="replace")
        gpu = bool(llama_cpp.llama_supports_gpu_offload())
    except Exception as e:  # ImportError, or OSError/FileNotFoundError when its shared library is missing
        return LlamaLibrary(False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": "))
    backends = backends_in(info)
    return LlamaLibrary(True, f"llama-cpp-python {llama_cpp.__version__} ({', '.join(backends) or 'CPU'}"
                              f"{', GPU offload' if gpu else ''})", gpu, backends)
