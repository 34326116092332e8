"""Which of llama.cpp's CPU kernel paths a model runs on, and a check at load that it computes right.

Built with `GGML_NATIVE=ON`, llama.cpp moves weights into "extra buffer types" made for the CPU:
AMX tiles where the CPU has AMX, else SIMD-friendly repacked blocks ("repack"). In llama-cpp-python
0.3.16 the AMX kernel gives logits off by up to 11.4 once a micro-batch holds 32 rows or more
(≤ 31 rows stay correct; measured on a Xeon with AMX, issue 25). The policy:

- `CONFAB_LLAMA_KERNELS=plain` forces the plain path (`use_extra_bufts = False`): correct everywhere,
  slower (2.6× prefill, 1.9× decode on that Xeon).
- build with AMX and a CPU with AMX (or one whose flags cannot be read): keep the repacked weights,
  but never hand the kernel more than `AMX_MAX_UBATCH` rows (`n_ubatch`).
- then, at load, `check_at_load` prefills `PROBE_TOKENS` tokens in one call and one token at a time on
  scratch sequences; when the last position's logits differ by more than `PROBE_TOLERANCE`, the model
  is loaded again on the plain path and the failure is reported (status bar, `engine check`,
  self-test). So a wrong kernel on a CPU nobody here has is caught on the user's machine. The probe
  is the model's warm-up too: its forwards page the weights in before the window says ready.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

import numpy as np

from .cpu_features import has_amx

log = logging.getLogger(__name__)

ENV = "CONFAB_LLAMA_KERNELS"
"""Set to "plain" to turn llama.cpp's extra buffer types (AMX, repacked weights) off."""
AMX_MAX_UBATCH = 16
"""Most rows a micro-batch hands the AMX kernel: ≤ 31 were correct in 0.3.16, ≥ 32 were not."""
PROBE_TOKENS = 40
PROBE_TOLERANCE = 2.0
"""Largest |logit difference| the probe accepts between one-call and one-token prefill. Measured on
a 2-core AVX2 CPU (no AMX): 0.0 on the bundled model, under 1e-5 on the test models; issue 25's AMX
Xeon: correct paths within 0.86 of a float32 reference (so up to ~1.7 apart), the broken one 11.4."""
PROBE_TEXT = ("The lighthouse keeper climbed the stairs at dusk, counted the ships on the horizon, and "
              "wrote in her log that the sea was calm, the wind came from the west, and the lamp was lit.")


@dataclass(frozen=True)
class KernelPath:
    """A kernel path and the load settings that give it."""

    name: str
    """"amx", "repack" or "plain"."""
    extra_bufts: bool
    """llama_model_params.use_extra_bufts: weights moved into AMX / repacked buffers."""
    max_ubatch: Optional[int]
    """Cap on n_ubatch (rows per micro-batch); None: no cap beyond the engine's own."""
    why: str


@dataclass(frozen=True)
class KernelCheck:
    """What the load-time check found (`Engine.kernel_check`)."""

    path: KernelPath
    """The path the model runs on now."""
    n_ubatch: int
    probe_diff: float
    """Largest |logit difference|, one call vs one-token pieces, on the path in use."""
    probe_seconds: float
    """Time the probe took (it is the model's warm-up too), fallback included."""
    tolerance: float = PROBE_TOLERANCE
    failed: str = ""
    """Empty when the first path passed; else what failed, e.g. "one call and one-token pieces
    differed by 11.40 on the amx path (tolerance 2.0)"."""
    left_gpu: bool = False
    """The GPU's layers disagreed and the model was loaded again on the CPU alone."""
    gpu_vs_cpu: Optional[float] = None
    """With layers on a GPU: largest |logit difference| from a CPU twin of the model (gpu_twin.py);
    None where not compared (no layer on a GPU, or too large a model for the twin)."""

    @property
    def ok(self) -> bool:
        """The path in use passes the probe."""
        return self.probe_diff <= self.tolerance

    @property
    def note(self) -> str:
        """One line for the backend reason and the status bar; "" when the first path passed."""
        if not self.failed:
            return "" if self.ok else f"kernel check failed: {self._self_disagreement()}"
        where = " and ".join(w for w, on in (("on the CPU", self.left_gpu), ("on plain kernels", not self.path.extra_bufts)) if on)
        return (f"kernel check failed ({self.failed}): running {where or 'as loaded'}"
                + ("" if self.ok else f", which disagree too ({self._self_disagreement()})"))

    def _self_disagreement(self) -> str:
        return f"one call and one-token pieces differ by {self.probe_diff:.2f} (tolerance {self.tolerance:g})"

    def describe(self) -> str:
        twin = "" if self.gpu_vs_cpu is None else f"; the GPU vs the CPU {self.gpu_vs_cpu:.3g} apart"
        return (f"{self.path.name} (n_ubatch {self.n_ubatch}; {self.path.why}); probe: one call vs "
                f"one-token pieces differ by {self.probe_diff:.3g} (tolerance {self.tolerance:g}){twin}, "
                f"{self.probe_seconds * 1000:.0f} ms" + (f"; {self.note}" if self.note else ""))


def build_features(system_info: str) -> frozenset[str]:
    """Features llama.cpp was built with, from llama_print_system_info ("AVX2 = 1 | AMX_INT8 = 1 | …")."""
    return frozenset(re.findall(r"(\w+) = 1\b", system_info))


def plain(why: str) -> KernelPath:
    return KernelPath("plain", False, None, why)


def choose_path(system_info: str, flags: Optional[frozenset[str]], env: Mapping[str, str] = os.environ) -> KernelPath:
    """The path to load with, before any probe (see the module's docstring)."""
    if env.get(ENV, "").strip().lower() == "plain":
        return plain(f"{ENV}=plain")
    build = build_features(system_info)
    if "AMX_INT8" in build and has_amx(flags) is not False:
        return KernelPath("amx", True, AMX_MAX_UBATCH, f"AMX kernels, at most {AMX_MAX_UBATCH} rows per micro-batch: "
                          "32 rows or more gave wrong logits in llama-cpp-python 0.3.16")
    if "REPACK" in build:
        return KernelPath("repack", True, None, "weights repacked for this CPU's SIMD kernels where their format has it")
    return KernelPath("plain", True, None, "this build has no AMX or repacked kernels")


def probe(backend, tokens: list[int]) -> float:
    """Largest |logit difference| at the last position between `tokens` prefilled in one call and
    one token per call, one after the other on a scratch sequence freed after each: an engine of
    `max_sessions=1` has one sequence, and the probe must give it back (it once held two and
    leaked the first when the second was refused)."""
    seq = backend.new_state()
    try:
        whole = backend.step([(seq, list(tokens))])[0]
    finally:
        backend.free_state(seq)
    seq = backend.new_state()
    try:
        for t in tokens:
            last = backend.step([(seq, [t])])[0]
    finally:
        backend.free_state(seq)
    return float(np.max(np.abs(whole - last)))


def probe_tokens(model, n: int = PROBE_TOKENS) -> list[int]:
    """`n` tokens of PROBE_TEXT in the model's own vocabulary (repeated if it tokenizes shorter)."""
    import llama_cpp as lc

    vocab = lc.llama_model_get_vocab(model)
    text = PROBE_TEXT.encode()
    buf = (lc.llama_token * (len(text) + 8))()
    count = lc.llama_tokenize(vocab, text, len(text), buf, len(buf), False, False)
    ids = list(buf[:max(count, 0)]) or [0]
    return (ids * (n // len(ids) + 1))[:n]


def check_at_load(backend, tokens: list[int], reload_plain: Callable[[str], None],
                  report: Callable[[float, str], None] = lambda f, m: None,
                  reload_cpu: Optional[Callable[[str], None]] = None) -> KernelCheck:
    """Probe the path `backend` loaded with; on disagreement, `reload_cpu(why)` where layers are on a
    GPU (its kernels are the ones in question: a one-token step and a prompt's run other kernels
    there), else `reload_plain(why)`, and probe again."""
    started = time.perf_counter()
    report(0.0, "checking llama.cpp's kernels (and warming the model up)")
    diff = probe(backend, tokens)
    path, failed = backend.kernel_path, ""
    placement = getattr(backend, "placement", None)
    on_gpu = reload_cpu is not None and placement is not None and placement.layers
    twin = None
    if on_gpu and diff <= PROBE_TOLERANCE:
        from .gpu_twin import gpu_vs_cpu

        report(0.3, "comparing the GPU's logits with the CPU's")
        twin = gpu_vs_cpu(backend, tokens, backend.available_memory())
    if on_gpu and (diff > PROBE_TOLERANCE or (twin is not None and twin > PROBE_TOLERANCE)):
        what = (f"one call and one-token pieces differed by {diff:.2f}" if diff > PROBE_TOLERANCE
                else f"its logits were {twin:.2f} from the CPU's")
        failed = (f"{what} with {placement.layers}/{placement.total} layers on {placement.backend} "
                  f"(tolerance {PROBE_TOLERANCE:g})")
        log.warning("llama.cpp %s; loading the model again on the CPU alone", failed)
        report(0.5, "kernel check failed on the GPU: loading again on the CPU")
        reload_cpu(f"the load-time check failed on the GPU: {failed}")
        diff = probe(backend, tokens)
        path = backend.kernel_path
    if diff > PROBE_TOLERANCE and path.extra_bufts:
        failed = (f"{failed}; then " if failed else "") + (
            f"one call and one-token pieces differed by {diff:.2f} on the {path.name} path (tolerance {PROBE_TOLERANCE:g})")
        log.warning("llama.cpp %s; loading the model again with plain kernels", failed)
        report(0.5, "kernel check failed: loading again with plain kernels")
        reload_plain(f"the load-time check failed: {failed}")
        diff = probe(backend, tokens)
    if diff > PROBE_TOLERANCE:
        log.warning("llama.cpp's %s kernels disagree with themselves by %.2f (tolerance %g)",
                    backend.kernel_path.name, diff, PROBE_TOLERANCE)
    report(1.0, "kernels checked")
    now = getattr(backend, "placement", None)
    left_gpu = bool(placement is not None and placement.layers and now is not None and not now.layers)
    return KernelCheck(backend.kernel_path, backend.n_ubatch, diff, time.perf_counter() - started, failed=failed,
                       left_gpu=left_gpu, gpu_vs_cpu=twin)
