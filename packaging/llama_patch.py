"""What a change to the vendored llama.cpp is (packaging/llama_patches.py, llama_patches_kquants.py
and llama_patches_vnni.py hold them, packaging/llama_source.py applies them).

Only the standard library: bootstrap.py imports this before anything is installed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    """Replace `old` (found exactly once) with `new` in `path`, relative to the vendored llama.cpp."""
    path: str
    old: str
    new: str


def two_rows_on_avx2(dot: str, vec_dot_type: str) -> Patch:
    """ggml's type traits ask `dot` for two rows at a time on x86 with AVX2 too, as on ARM with i8mm:
    only where a kernel patch (llama_patches.py's `*_TWO_BY_TWO`, llama_patches_kquants.py's
    `Q6_K_TWO_ROWS`) gives it a two-row path."""
    head = f"""        .vec_dot                  = {dot},
        .vec_dot_type             = {vec_dot_type},
#if defined (__ARM_FEATURE_MATMUL_INT8)"""
    return Patch("ggml/src/ggml-cpu/ggml-cpu.c", old=head + "\n",
                 new=head + " || defined(__AVX2__)  // Confab: the x86 two-by-two dot (arch/x86/quants.c)\n")
