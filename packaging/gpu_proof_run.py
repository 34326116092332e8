"""The GPU machine's side of packaging/gpu_proof.py: set up from `.gpu-proof/`, then tests, the
reference check and the benches, each step time-limited, its output and figures written to the
results folder as soon as it ends (summary.json and summary.md at the end, and after every step)."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gpu_proof_models as models
import gpu_proof_servers as servers

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / ".gpu-proof"
SITE = Path("/tmp/confab-proof-site")
TESTS = ["tests/engine/test_llamacpp_placement.py", "tests/engine/test_llamacpp.py", "tests/engine/test_llamacpp_rows.py",
         "tests/engine/test_llamacpp_cell_order.py", "tests/engine/test_kernel_check.py", "tests/engine/test_isolation.py",
         "tests/engine/test_batching.py", "tests/engine/test_state_exact.py", "tests/engine/test_state_file.py",
         "tests/engine/test_reference_logits.py", "tests/engine/test_speculative.py", "tests/engine/test_draft_model.py",
         "tests/engine/test_kv_room.py", "tests/engine/test_sampling.py", "tests/engine/test_cancel.py"]
"""The engine tests that run on llama.cpp (their llamacpp cases: tiny models, the tokenizer only)."""


class Proof:
    """The results folder, the time left and the figures so far."""

    def __init__(self, results: Path, minutes: float, skip: frozenset = frozenset()) -> None:
        self.results = results
        self.skip = skip
        """Steps not to run (a second run after a first that ran them)."""
        self.deadline = time.monotonic() + minutes * 60
        self.summary: dict = {"steps": {}}
        results.mkdir(parents=True, exist_ok=True)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def step(self, name: str, command: list, env: dict, limit_s: float) -> tuple[int, str]:
        """Run one step with at most `limit_s` (and never past the deadline); its output to NAME.log."""
        limit = min(limit_s, self.left())
        if name in self.skip:
            self.summary["steps"][name] = "skipped: asked to"
            return -1, ""
        if limit < 20:
            self.summary["steps"][name] = "skipped: out of time"
            self.save()
            return -1, ""
        began = time.monotonic()
        print(f"== {name} (at most {limit:.0f} s)", flush=True)
        try:
            # a session of its own: past its limit the step goes with everything it started (a bench's
            # `engine serve` outlived its killed parent here once)
            process = subprocess.Popen([str(c) for c in command], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, start_new_session=True)
            try:
                out, _ = process.communicate(timeout=limit)
                code = process.returncode
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                out, code = process.communicate()[0], 124
        except OSError as e:  # a tool missing here (nvidia-smi on a machine without a driver)
            code, out = 127, f"{type(e).__name__}: {e}"
        (self.results / f"{name}.log").write_text(out)
        self.summary["steps"][name] = f"exit {code} in {time.monotonic() - began:.0f} s"
        print(out[-3000:], flush=True)
        self.save()
        return code, out

    @staticmethod
    def last_json(text: str) -> dict:
        return _last_json(text)

    def save(self) -> None:
        (self.results / "summary.json").write_text(json.dumps(self.summary, indent=1))
        (self.results / "summary.md").write_text(summary_table(self.summary))


def environment() -> dict:
    """The engine's environment here: the carried wheels (installed once into SITE), llama-cpp-python's
    Python files and the CUDA build's libraries, the CUDA runtime found on this machine, and the
    bundled model's tokenizer for the tests."""
    wheels = sorted((KIT / "wheels").glob("*.whl"))
    present = subprocess.run([sys.executable, "-c", "import fastapi, openai, llguidance, gguf, platformdirs, diskcache"],
                             capture_output=True).returncode == 0
    if wheels and not present and not (SITE / ".done").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--target", str(SITE), *map(str, wheels)], check=True)
        (SITE / ".done").write_text("")
    env = dict(os.environ)
    site = [str(SITE)] if (SITE / ".done").exists() else []
    env["PYTHONPATH"] = os.pathsep.join([*site, str(KIT / "site"), str(ROOT), env.get("PYTHONPATH", "")])
    sys.path[:0] = [*site, str(KIT / "site"), str(ROOT)]  # this process imports the engine's bench helpers too
    env["LLAMA_CPP_LIB_PATH"] = str(KIT / "bin")
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(KIT / "bin"), *cuda_library_folders(), env.get("LD_LIBRARY_PATH", "")])
    # tiny models with 64-wide heads, as real models have: 16-wide ones were computed wrong by ggml's
    # Vulkan backend, and the engine then runs them on the CPU (tests/conftest.py, HEAD_DIM)
    env.update(CONFAB_TEST_TOKENIZER=str(KIT / "tokenizer"), CONFAB_TEST_VOCAB_GGUF=str(KIT / "vocab.gguf"),
               CONFAB_TEST_HEAD_DIM="64", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", QT_QPA_PLATFORM="offscreen")
    return env


def cuda_library_folders() -> list[str]:
    """Folders holding libcudart and libcublas of CUDA 12 or 13: NVIDIA's wheels beside this Python's
    torch, the system toolkit, or prepare's wheel toolkit."""
    import sysconfig

    site = sysconfig.get_paths()["purelib"]
    patterns = [f"{site}/nvidia/cu1*/lib", f"{site}/nvidia/cublas/lib", f"{site}/nvidia/cuda_runtime/lib",
                "/usr/local/cuda/lib64", "/usr/local/cuda/targets/*/lib", str(ROOT / "build/gpu-proof/cuda-toolkit/lib64")]
    found = []
    for pattern in patterns:
        for folder in glob.glob(pattern):
            if glob.glob(f"{folder}/libcublas.so.1*") or glob.glob(f"{folder}/libcudart.so.1*"):
                found.append(folder)
    return found


def facts(proof: Proof, env: dict) -> None:
    code, out = proof.step("facts", [sys.executable, "-c", (
        "import json, engine; from engine.backends.llamacpp_devices import gpu_devices; import llama_cpp;"
        "llama_cpp.llama_backend_init(); lib = engine.llama_library();"
        "print(json.dumps({'library': lib.detail, 'backends': lib.backends, "
        "'devices': [d.__dict__ for d in gpu_devices()]}))")], env, 120)
    proof.summary["facts"] = _last_json(out)
    _, smi = proof.step("nvidia-smi", ["nvidia-smi"], env, 30)
    proof.summary["card"] = next((line.strip() for line in smi.splitlines() if "NVIDIA" in line and "%" not in line), "")
    _, plan = proof.step("setup-dry-run", [sys.executable, "bootstrap.py", "setup", "--dry-run"], env, 60)
    proof.summary["setup_would_build"] = [line.strip() for line in plan.splitlines() if line.strip()]


SELECT = "(llamacpp or placement or kernel or cell_order or rows) and not mlx"
"""pytest -k: the llama.cpp cases of TESTS."""


def tests(proof: Proof, env: dict, select: str = SELECT) -> None:
    command = [sys.executable, "-m", "pytest", "-q", "--maxfail=10", "-p", "no:cacheprovider", "--timeout", "300",
               f"--junitxml={proof.results / 'tests.xml'}", "-k", select, *TESTS]
    code, out = proof.step("tests", command, env, 420)
    proof.summary["tests"] = next((line for line in reversed(out.splitlines()) if " in " in line and "passed" in line
                                   or "failed" in line), f"exit {code}")


def benches(proof: Proof, env: dict, sizes: list[str]) -> None:
    small, large = models.make(KIT, ROOT / "build" / "gpu-proof-models", env, sizes)
    proof.summary["models"] = {"small": str(small), "large": str(large)}
    _, out = proof.step("check", [sys.executable, "-m", "engine", "check", small, "--backend", "llamacpp"], env, 180)
    proof.summary["check"] = [line for line in out.splitlines() if line.startswith(("  ", "OK", "FAILED", "device"))]
    for name, model in (("small", small), ("large", large)):
        if model is None:
            continue
        _, out = proof.step(f"bench-{name}", [sys.executable, "-m", "engine", "bench", "--model", model, "--backend",
                                              "llamacpp", "--sessions", "1,8", "--tokens", "128",
                                              "--prefill-tokens", "1500", "--json"], env, 240)
        proof.summary[f"bench_{name}"] = _pick(_last_json(out), "decode_tok_s", "library_decode_tok_s",
                                                "decode_vs_library", "aggregate_tok_s", "aggregate8_vs_1",
                                                "prefill_tok_s", "placement", "quantized", "ttft_busy8_vs_idle")
        if f"vs-server-{name}" not in proof.skip:
            proof.summary[f"servers_{name}"] = servers.compare(KIT / "bin" / "llama-server", model, env, proof, name)
        proof.save()
    _, out = proof.step("speculative", [sys.executable, "-m", "engine", "bench", "--speculative", "--model", small,
                                        "--json"], env, 240)
    proof.summary["speculative"] = _pick(_last_json(out), "step_ms_1", "step_ms_13", "ceiling", "edit_speedup",
                                         "chat_speedup", "acceptance")


def _last_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return {}


def _pick(figures: dict, *keys: str) -> dict:
    return {k: figures.get(k) for k in keys if k in figures} or figures


def summary_table(summary: dict) -> str:
    lines = ["# GPU proof", "", f"card: {summary.get('card', '?')}", ""]
    for key, value in summary.items():
        if key != "card":
            lines.append(f"- **{key}**: `{json.dumps(value)}`")
    return "\n".join(lines) + "\n"


def main(results: Path, part: str, minutes: float, sizes: list[str], skip: frozenset = frozenset(),
         select: str = SELECT) -> int:
    proof = Proof(results, minutes, skip)
    env = environment()
    facts(proof, env)
    if part in ("all", "tests"):
        tests(proof, env, select)
    if part in ("all", "bench"):
        benches(proof, env, sizes)
    proof.save()
    print(summary_table(proof.summary), flush=True)
    return 0
