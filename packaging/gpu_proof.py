"""A one-shot proof of the llama.cpp backend on an NVIDIA GPU, for a GPU machine without network.

    python3 packaging/gpu_proof.py prepare --arch 90          # here: network, a C++ compiler; no GPU needed
    python3 packaging/gpu_proof.py run --results DIR          # there: the GPU machine (Python 3.10+, torch)

`prepare` builds llama.cpp with CUDA for one architecture (cmake, from llama-cpp-python's pinned
sdist, the flags bootstrap.py gives a CUDA build; NVIDIA's toolkit wheels when no nvcc with cuBLAS is
installed), with llama.cpp's own `llama-server`, `llama-quantize` and `llama-bench` from the same
build, and gathers what the GPU machine lacks into `.gpu-proof/` (git-ignored, about 50 MB): those
binaries, llama-cpp-python's Python files, wheels of the Python packages the engine and its server
import, and the bundled model's tokenizer (a weightless GGUF and the tokenizer files). The GPU
machine then spends its minutes on the proof, not on a build (gpu_proof_run.py):

1. what set-up would build there (`bootstrap.py setup --dry-run` on the real card) and what the
   library sees (its build, the card, free memory);
2. the llama.cpp engine tests on the GPU build (tiny models: one call vs pieces vs joint batches,
   sessions alone vs beside others, save/restore, drafts, the pool, placement);
3. `python -m engine check` against a float32 torch reference, on a model in the bundled model's shape;
4. `bench --backend llamacpp --sessions 1,8` beside llama-cpp-python's `Llama`, and one and eight
   clients of Confab's server beside `llama-server -np 8` over HTTP with the same client, on the
   bundled model's shape (Q4_1) and a 1.7B one (Q4_K_M), both random weights with the real tokenizer,
   written and quantized by llama.cpp's own tool; then `bench --speculative`.

Every step has a time limit and writes its figures as it ends, so a run cut short still reports.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import cuda_wheels  # noqa: E402 - needs the path above
import gpu_detect  # noqa: E402
import llama_tools  # noqa: E402
from llama_tools import TARGETS, run  # noqa: E402
from llama_build_plan import CUDA_FLAGS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / ".gpu-proof"
"""What travels to the GPU machine (git-ignored)."""
WORK = ROOT / "build" / "gpu-proof"
"""Sources, toolkit and build tree of `prepare` (stays here)."""
PORTABLE_CPU = "-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"
"""The GPU machine's CPU is not this one's: its baseline x86-64 kernels (AVX2), not this CPU's own."""
WHEELS = ("fastapi", "uvicorn", "openai", "llguidance", "gguf", "platformdirs", "diskcache", "huggingface_hub")
"""What the engine, its server and llama-cpp-python import beyond torch/transformers/numpy (the GPU
machine has those); their dependencies come too."""
ON_THE_GPU_MACHINE = {"numpy", "torch", "pyyaml", "tqdm", "filelock", "fsspec", "packaging", "requests",
                      "urllib3", "certifi", "charset_normalizer", "hf_xet", "tokenizers", "safetensors", "huggingface_hub"}
"""Left out of the wheels: large, or already there in versions the engine takes (huggingface_hub too:
that machine's transformers pins its own major version, and a newer one ahead of it on the path
stops transformers from importing)."""


def compiler(cuda: str) -> gpu_detect.CudaCompiler:
    """An nvcc with cuBLAS beside it: one installed, else NVIDIA's wheels of CUDA `cuda`."""
    for found in gpu_detect.cuda_compilers(os.environ, WORK):
        if found.version.split(".")[0] == cuda.split(".")[0] and not gpu_detect.toolkit_lacks(found.root):
            return found
    root = WORK / gpu_detect.WHEEL_TOOLKIT
    if not (root / "bin" / "nvcc").is_file():
        cuda_wheels.install([sys.executable, "-m", "pip", "install", "-q"],
                            f"{gpu_detect.WHEEL_PACKAGE}[nvcc,cudart,cublas,cccl,crt,nvvm]=={cuda}.*", WORK)
    nvcc = root / "bin" / "nvcc"
    return gpu_detect.CudaCompiler(nvcc, gpu_detect.nvcc_version(nvcc, os.environ) or cuda, "wheels", root)


def build(src: Path, arch: str, nvcc: gpu_detect.CudaCompiler) -> Path:
    """llama.cpp's libraries and tools, CUDA for `arch` (e.g. "90"), every binary finding its
    libraries beside itself."""
    return llama_tools.build(src, WORK / f"build-sm{arch}", [
        f"-DCMAKE_CUDA_ARCHITECTURES={arch}-real", f"-DCMAKE_CUDA_COMPILER={nvcc.nvcc}", f"-DCUDAToolkit_ROOT={nvcc.root}",
        # the tools link ggml's CUDA library, which needs cuBLAS: tell the linker where it is (at run
        # time LD_LIBRARY_PATH or the system's loader finds it; gpu_proof_run.py sets it)
        f"-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,{nvcc.root / 'lib64'}", *PORTABLE_CPU.split(), *CUDA_FLAGS.split()])


def gather(built: Path, src: Path) -> None:
    """Binaries (stripped), llama-cpp-python's Python files, wheels, the tokenizer: into KIT."""
    shutil.rmtree(KIT, ignore_errors=True)
    (KIT / "bin").mkdir(parents=True)
    for path in sorted(built.iterdir()):
        if path.suffix == ".so" or path.name in TARGETS:
            shutil.copy2(path, KIT / "bin" / path.name)
            subprocess.run(["strip", "--strip-unneeded", str(KIT / "bin" / path.name)], check=False)
    shutil.copytree(src / "llama_cpp", KIT / "site" / "llama_cpp", ignore=shutil.ignore_patterns("lib", "server"))
    wheels = KIT / "wheels"
    run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", "3.12",
         "--implementation", "cp", *[a for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64",
                                                  "manylinux2014_x86_64") for a in ("--platform", p)],
         "-d", wheels, *WHEELS])
    for wheel in wheels.glob("*.whl"):
        if wheel.name.split("-")[0].lower() in ON_THE_GPU_MACHINE:
            wheel.unlink()
    tokenizer()


def tokenizer() -> None:
    """The bundled model's tokenizer as the tests take it without the model: its tokenizer files
    (CONFAB_TEST_TOKENIZER), a GGUF of its tokenizer fields alone (CONFAB_TEST_VOCAB_GGUF), and its
    config (the shape the proof's models copy)."""
    import gguf

    from engine.models import resolve
    from engine.models.sources import bundled_gguf

    folder = resolve("bundled:smollm2-135m-instruct").path
    (KIT / "tokenizer").mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "config.json"):
        if (folder / name).exists():
            shutil.copy(folder / name, KIT / "tokenizer" / name)
    reader = gguf.GGUFReader(str(bundled_gguf("smollm2-135m-instruct")))
    writer = gguf.GGUFWriter(str(KIT / "vocab.gguf"), "llama")
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            writer.add_key_value(key, field.contents(), field.types[0],
                                 sub_type=field.types[1] if len(field.types) > 1 else None)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()


def size_report() -> int:
    total = sum(p.stat().st_size for p in KIT.rglob("*") if p.is_file())
    print(json.dumps({p.name: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) >> 20
                      for p in KIT.iterdir() if p.is_dir()}), f"total {total / 2**20:.1f} MiB", flush=True)
    return total


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gpu_proof.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prepare = sub.add_parser("prepare", help="build llama.cpp with CUDA and gather what the GPU machine lacks")
    prepare.add_argument("--arch", default="90", help="the card's compute capability without the dot (90: H100/H200)")
    prepare.add_argument("--cuda", default="13.0", help="CUDA version the GPU machine's driver runs (its nvidia-smi)")
    go = sub.add_parser("run", help="on the GPU machine: tests, reference check and benches into --results")
    go.add_argument("--results", type=Path, required=True)
    go.add_argument("--part", choices=["all", "tests", "bench"], default="all")
    go.add_argument("--minutes", type=float, default=9.5, help="stop starting new steps after this long")
    go.add_argument("--models", default="small,large", help="which bench models: small (135M's shape), large (1.7B's)")
    go.add_argument("--skip", default="", help="steps not to run, by name (bench-small,check,...)")
    go.add_argument("--select", default=None, help="pytest -k for the tests step (default: the llama.cpp cases)")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        src = llama_tools.sources(WORK)
        gather(build(src, args.arch, compiler(args.cuda)), src)
        return 0 if size_report() < 56 << 20 else 1
    import gpu_proof_run

    return gpu_proof_run.main(args.results, args.part, args.minutes, args.models.split(","),
                              frozenset(filter(None, args.skip.split(","))), args.select or gpu_proof_run.SELECT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
