"""What this CPU can do, as the operating system reports it (not what a library was built for).

The kernel-path policy (kernel_check.py) needs to know whether the CPU has AMX: llama.cpp built with
`GGML_NATIVE=ON` on such a CPU repacks weights for AMX tile kernels, which gave wrong logits in
llama-cpp-python 0.3.16. `python -m engine check` prints the summary.

    flags = cpu_flags()          # frozenset({"avx2", "fma", ...}), or None where it cannot be read
    describe(flags)              # "AVX2 yes · AVX-512 no · AVX512_BF16 no · AMX no"
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path
from typing import Optional

SHOWN = (("AVX2", ("avx2",)), ("AVX-512", ("avx512f",)), ("AVX512_BF16", ("avx512_bf16",)),
         ("AMX", ("amx_tile", "amx_int8")), ("NEON", ("asimd", "neon")))
"""(name, flags that mean it: any of them) in the order the summary lists them."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> Optional[frozenset[str]]:
    """The CPU's feature flags in Linux's lower-case names ("avx2", "amx_int8", "asimd"…); None
    where the system does not say (then callers assume the worst: AMX may be there)."""
    if sys.platform.startswith("linux"):
        try:
            text = cpuinfo.read_text(errors="replace")
        except OSError:
            return None
        return parse_cpuinfo(text)
    if sys.platform == "darwin":
        if platform.machine() == "arm64":
            return frozenset({"asimd", "neon"})  # Apple Silicon: NEON, never AMX (Intel's)
        return _sysctl_flags()
    return None  # Windows: no cheap, dependable way to read AMX support here


def parse_cpuinfo(text: str) -> frozenset[str]:
    """Flags of the first processor in /proc/cpuinfo ("flags" on x86, "Features" on ARM)."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def _sysctl_flags() -> Optional[frozenset[str]]:
    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # macOS names them "AVX2", "AVX512F", "AMX_TILE"…: the same words in upper case, dots as in "AVX1.0"
    return frozenset(word.lower().replace(".", "_") for word in out.split()) or None


def has_amx(flags: Optional[frozenset[str]]) -> Optional[bool]:
    """True/False as the flags say; None when they are unknown."""
    return None if flags is None else {"amx_tile", "amx_int8"} <= flags


def describe(flags: Optional[frozenset[str]]) -> str:
    """One line: "AVX2 yes · AVX-512 no · AVX512_BF16 no · AMX no" (ARM adds NEON)."""
    if flags is None:
        return f"{platform.machine() or 'unknown CPU'}: the system does not report its CPU features"
    parts = []
    for name, any_of in SHOWN:
        have = all(f in flags for f in any_of) if name == "AMX" else any(f in flags for f in any_of)
        if name == "NEON" and not have:
            continue  # only said on ARM
        parts.append(f"{name} {'yes' if have else 'no'}")
    return " · ".join(parts)


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name where the system says it, else the machine type."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
