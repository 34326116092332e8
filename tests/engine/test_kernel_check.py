"""llama.cpp's kernel-path policy and its load-time check (engine/correctness/kernels.py), and the
`python -m engine check` command.

No AMX CPU was available here: the AMX side is driven through its inputs (llama.cpp's system info and
the CPU flags) and the fallback through an injected disagreeing probe.
"""

from __future__ import annotations

import argparse

import pytest

from engine import Engine, EngineConfig, SamplingParams
from engine.correctness import kernels as kernel_check
from engine.correctness.cpu_features import describe, parse_cpuinfo
from engine.correctness.kernels import AMX_MAX_UBATCH, ENV, choose_path
from tests.engine.helpers import token_ids

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

AMX_BUILD = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | REPACK = 1 |"
AVX2_BUILD = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | LLAMAFILE = 1 | REPACK = 1 |"
AMX_CPU = frozenset({"avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"})
AVX2_CPU = frozenset({"avx", "avx2", "fma", "f16c"})


@pytest.mark.parametrize("info, flags, env, name, extra, ubatch", [
    (AMX_BUILD, AMX_CPU, {}, "amx", True, AMX_MAX_UBATCH),
    (AMX_BUILD, None, {}, "amx", True, AMX_MAX_UBATCH),  # flags unknown (Windows): assume AMX may be there
    (AMX_BUILD, AVX2_CPU, {}, "repack", True, None),     # a portable AMX build on a CPU without it
    (AVX2_BUILD, AMX_CPU, {}, "repack", True, None),     # the CPU has AMX, the build has no AMX kernels
    ("CPU : AVX2 = 1 |", AVX2_CPU, {}, "plain", True, None),
    (AMX_BUILD, AMX_CPU, {ENV: "plain"}, "plain", False, None),
    (AVX2_BUILD, AVX2_CPU, {ENV: " Plain "}, "plain", False, None),
])
def test_the_kernel_path_follows_the_build_the_cpu_and_the_override(info, flags, env, name, extra, ubatch):
    path = choose_path(info, flags, env)
    assert (path.name, path.extra_bufts, path.max_ubatch) == (name, extra, ubatch)


def test_cpu_features_are_read_from_the_system():
    flags = parse_cpuinfo("processor : 0\nmodel name : Intel Xeon\nflags : fpu avx2 avx512f amx_tile amx_int8\n")
    assert describe(flags) == "AVX2 yes · AVX-512 yes · AVX512_BF16 no · AMX yes"
    assert describe(parse_cpuinfo("processor : 0\nFeatures : fp asimd evtstrm\n")) == (
        "AVX2 no · AVX-512 no · AVX512_BF16 no · AMX no · NEON yes")
    assert "does not report" in describe(None)


def greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_stop=True)


def reply(engine: Engine) -> list[int]:
    with engine.open_session() as s:
        return token_ids(s.generate([5, 6, 7, 8], greedy(12)))


def test_the_check_runs_inside_the_load_and_passes_here(gguf_source, tiny_models):
    messages: list[str] = []
    with Engine.load(str(gguf_source(tiny_models["llama"])), EngineConfig(backend="llamacpp", max_context=256),
                     progress=lambda f, m: messages.append(m)) as engine:
        check = engine.kernel_check
        assert check.ok and not check.failed and check.note == ""
        assert check.probe_diff <= check.tolerance and check.probe_seconds > 0
        assert engine.backend_reason == "llama.cpp: asked for"
        assert len(reply(engine)) == 12
    # the probe is the warm-up: inside the load's progress, before it says loaded
    checking = next(i for i, m in enumerate(messages) if m.startswith("checking llama.cpp's kernels"))
    assert checking < len(messages) - 1 and messages[-1].startswith("loaded")


def test_a_disagreeing_probe_reloads_on_plain_kernels_and_says_so(gguf_source, tiny_models, monkeypatch):
    # the CPU's kernel paths, so the CPU alone: on a GPU a disagreeing probe reloads on the CPU instead
    # (test_a_gpu_whose_logits_stray_from_the_cpus_is_left_for_the_cpu)
    source, on_cpu = str(gguf_source(tiny_models["llama"])), EngineConfig(backend="llamacpp", max_context=256, gpu_layers=0)
    with Engine.load(source, on_cpu) as engine:
        want = reply(engine)
    real, calls = kernel_check.probe, []

    def broken_first(backend, tokens):  # what the AMX kernel did at ≥ 32 rows
        calls.append(backend.kernel_path.name)
        return 11.4 if len(calls) == 1 else real(backend, tokens)

    monkeypatch.setattr(kernel_check, "probe", broken_first)
    with Engine.load(source, on_cpu) as engine:
        check = engine.kernel_check
        assert check.path.name == "plain" and not check.path.extra_bufts and check.ok
        assert check.failed == f"one call and one-token pieces differed by 11.40 on the {calls[0]} path (tolerance 2)"
        assert "the load-time check failed" in check.path.why
        assert engine.backend_reason.startswith("llama.cpp: asked for; kernel check failed (one call and")
        assert engine.backend_reason.endswith("running on plain kernels")
        assert reply(engine) == want  # still loads, still answers, on the plain path
    assert calls[1] == "plain" and len(calls) == 2


def test_on_an_amx_build_and_cpu_micro_batches_are_capped(gguf_source, tiny_models, monkeypatch):
    from engine.backends import llamacpp

    monkeypatch.setattr(llamacpp.lc, "llama_print_system_info", lambda: AMX_BUILD.encode())
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: AMX_CPU)
    with Engine.load(str(gguf_source(tiny_models["llama"])), EngineConfig(backend="llamacpp", max_context=256)) as engine:
        check = engine.kernel_check
        assert (check.path.name, check.n_ubatch) == ("amx", AMX_MAX_UBATCH)
        assert len(reply(engine)) == 12  # a 4-token prompt and 40-token probe in micro-batches of 16


def test_the_environment_forces_the_plain_path(gguf_source, tiny_models, monkeypatch):
    monkeypatch.setenv(ENV, "plain")
    with Engine.load(str(gguf_source(tiny_models["llama"])), EngineConfig(backend="llamacpp", max_context=256)) as engine:
        check = engine.kernel_check
        assert (check.path.name, check.path.extra_bufts, check.failed) == ("plain", False, "")
        assert check.path.why == f"{ENV}=plain"


def _check_args(source: str, **extra) -> argparse.Namespace:
    return argparse.Namespace(model=source, backend="llamacpp", tolerance=1.0, no_reference=False, **extra)


def test_engine_check_prints_the_cpu_the_path_and_the_figures(gguf_source, tiny_models, capsys, monkeypatch):
    from engine.cli.check import run_check

    monkeypatch.setenv("CONFAB_THREADS", "1")
    assert run_check(_check_args(str(gguf_source(tiny_models["llama"])))) == 0
    out = capsys.readouterr().out
    assert "CPU: " in out and "AVX2 " in out and "AMX " in out
    assert "llama.cpp: llama-cpp-python 0.3.16" in out
    assert "kernel path: " in out and "probe: one call vs one-token pieces differ by" in out
    for label in ("one call", "pieces of 1", "pieces of 16", "pieces of 32", "pieces of 128", "joint with 3 others"):
        assert f"  {label}" in out
    assert "OK: ways of prefilling within" in out and "of the reference (tolerance 1)" in out


def test_engine_check_exits_non_zero_past_tolerance(gguf_source, tiny_models, capsys, monkeypatch):
    from engine.__main__ import main

    monkeypatch.setenv("CONFAB_THREADS", "1")
    source = str(gguf_source(tiny_models["llama"]))
    assert main(["check", source, "--backend", "llamacpp", "--tolerance", "1e-9"]) == 1
    assert "FAILED: ways of prefilling within" in capsys.readouterr().out


class GpuBackendStandIn:
    """What check_at_load reads of a backend with every layer on a GPU; reload_cpu moves them off."""

    def __init__(self) -> None:
        from engine.backends.llamacpp_offload import Placement

        self.kernel_path = kernel_check.KernelPath("repack", True, None, "repacked")
        self.n_ubatch = 512
        self.placement = Placement("CUDA", "NVIDIA GeForce RTX 4070", 31, 31, "the whole model fits the GPU")
        self.reloads: list[str] = []

    def available_memory(self) -> int:
        return 64 << 30

    def reload_cpu(self, why: str) -> None:
        from engine.backends.llamacpp_offload import Placement

        self.reloads.append(why)
        self.placement = Placement("", "", 0, 31, why)


@pytest.mark.parametrize("apart, leaves", [(18.08, True), (0.39, False)])
def test_a_gpu_whose_logits_stray_from_the_cpus_is_left_for_the_cpu(monkeypatch, apart, leaves):
    """Measured on ggml's Vulkan backend: the tiny model (16-wide heads) 18-25 apart from the CPU, the
    bundled model 0.39; one call and one-token pieces agreed on the GPU both times."""
    from engine.correctness import gpu_twin

    monkeypatch.setattr(kernel_check, "probe", lambda backend, tokens: 0.0)
    monkeypatch.setattr(gpu_twin, "gpu_vs_cpu", lambda backend, tokens, available: apart)
    backend = GpuBackendStandIn()
    check = kernel_check.check_at_load(backend, [1, 2, 3], reload_plain=lambda why: None, reload_cpu=backend.reload_cpu)
    assert check.gpu_vs_cpu == apart
    if leaves:
        assert check.left_gpu and backend.placement.layers == 0
        assert check.failed == "its logits were 18.08 from the CPU's with 31/31 layers on CUDA (tolerance 2)"
        assert check.note.endswith("running on the CPU")
        assert backend.reloads == [f"the load-time check failed on the GPU: {check.failed}"]
    else:
        assert not check.left_gpu and check.note == "" and backend.reloads == []
        assert "the GPU vs the CPU 0.39 apart" in check.describe()


def test_the_cpu_twin_reads_the_model_as_the_engine_does(gguf_source, tiny_models):
    from engine.correctness.gpu_twin import gpu_vs_cpu

    # the engine on the CPU too (on a GPU machine it would run there): the same kernels both sides
    config = EngineConfig(backend="llamacpp", max_context=256, gpu_layers=0)
    with Engine.load(str(gguf_source(tiny_models["llama"])), config) as engine:
        backend = engine._worker.backend
        tokens = kernel_check.probe_tokens(backend.model)
        apart = engine._call(lambda w: gpu_vs_cpu(w.backend, tokens, 64 << 30))
        assert apart is not None and apart < 1e-3, "the same file, the same kernels: the same logits"
        assert engine._call(lambda w: gpu_vs_cpu(w.backend, tokens, 1 << 20)) is None, "too large for RAM: skipped"
        assert engine.capacity().held_tokens == 0, "no cell left behind"
