"""Build llama-cpp-python for the installers into build/llama-portable and print that folder.

    .venv/bin/python packaging/build_llama.py     # the platform scripts run this before PyInstaller

The .venv's own llama.cpp is built for its machine's CPU (bootstrap.py's native flags); an installer
must run on other CPUs, so it bundles this separate build made with build_info.llama_cmake_args()
(portable by default). It goes to its own folder with `pip install --target`, leaving .venv as it is,
from the same patched source as .venv's (llama_source.py), and is rebuilt only when the requirement,
the flags or the patches change. Needs a C/C++ compiler and CMake.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_info  # noqa: E402 - needs the path above
import llama_source  # noqa: E402

TARGET = build_info.ROOT / "build" / "llama-portable"


def main() -> int:
    want = {"requirement": build_info.llama_requirement(), "cmake_args": build_info.llama_cmake_args(),
            "patches": llama_source.PATCH_ID}
    stamp = TARGET / "confab-llama.json"
    if not (stamp.exists() and json.loads(stamp.read_text()) == want
            and build_info.llama_libraries(TARGET / build_info.LLAMA_PACKAGE)):
        shutil.rmtree(TARGET, ignore_errors=True)
        print(f"building {want['requirement']} for the installer (CMAKE_ARGS={want['cmake_args']!r})",
              file=sys.stderr, flush=True)
        # --no-cache-dir: pip's wheel cache does not know which flags built a wheel (it may hold the
        # native one); --no-deps: its Python dependencies come from .venv like every other package's.
        with tempfile.TemporaryDirectory() as folder:  # the sdist with Confab's patches (llama_source.py)
            source = llama_source.patched_source(want["requirement"], Path(folder))
            subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                            "--no-deps", "--no-cache-dir", "--target", str(TARGET), str(source)],
                           env={**os.environ, "CMAKE_ARGS": want["cmake_args"]}, check=True)
        stamp.write_text(json.dumps(want))
    print(TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
