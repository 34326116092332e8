"""llama.cpp's own tools (`llama-server`, `llama-bench`, `llama-quantize`) built from the very sources
Confab's llama-cpp-python is built from (its pinned sdist vendors llama.cpp; Confab's patches applied
unless --as-published), so that the engine can be
measured beside llama.cpp itself on the same code and flags.

    .venv/bin/python packaging/llama_tools.py                       # this CPU, Confab's flags
    .venv/bin/python packaging/llama_tools.py --flags=-DGGML_NATIVE=ON --name defaults --as-published
                                                                    # llama.cpp as published, its defaults
    # -> build/llama-tools/<name>/bin/llama-server … (about 5 minutes on two cores)

gpu_proof.py builds its CUDA tools with the same two functions.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_info  # noqa: E402 - needs the path above
import llama_source  # noqa: E402
from llama_build_plan import CPU_FLAGS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("llama", "ggml", "llama-server", "llama-quantize", "llama-bench")
COMMON = ("-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
          "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON",
          "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=$ORIGIN")
"""Shared libraries that find each other beside the binaries, no network code, the tools only."""


def run(command: Sequence, **kw) -> None:
    print("+", " ".join(str(c) for c in command), flush=True)
    subprocess.run([str(c) for c in command], check=True, **kw)


def sources(work: Path, patched: bool = True) -> Path:
    """llama-cpp-python's pinned sdist, downloaded and unpacked once into `work`/src-patched with
    Confab's patches (packaging/llama_source.py: what Confab's own build runs), or into `work`/src as
    published (llama.cpp's own tools to measure against)."""
    src = work / ("src-patched" if patched else "src")
    found = [p for p in src.glob("llama_cpp_python-*") if p.is_dir()]
    if not found:
        tarballs = list(src.glob("llama_cpp_python-*.tar.gz"))
        found = [llama_source.unpack(tarballs[0] if tarballs else llama_source.download(build_info.llama_requirement(), src), src)]
    if patched:
        llama_source.apply(found[0])
    return found[0]


def build(src: Path, tree: Path, flags: Sequence[str], targets: Sequence[str] = TARGETS) -> Path:
    """Configure and build `targets` of the vendored llama.cpp with `flags` into `tree`; its bin/."""
    run(["cmake", "-S", src / "vendor" / "llama.cpp", "-B", tree, "-G", "Ninja", *COMMON, *flags])
    run(["cmake", "--build", tree, "--target", *targets])
    return tree / "bin"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="llama_tools.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--flags", default=CPU_FLAGS, help=f"CMake flags (default Confab's CPU build: {CPU_FLAGS})")
    parser.add_argument("--name", default="confab", help="the build's folder under build/llama-tools")
    parser.add_argument("--as-published", action="store_true",
                        help="llama.cpp without Confab's patches (packaging/llama_source.py): the reference")
    args = parser.parse_args(argv)
    work = ROOT / "build" / "llama-tools"
    print(build(sources(work, patched=not args.as_published), work / args.name, args.flags.split()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
