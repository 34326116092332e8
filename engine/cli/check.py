"""`python -m engine check [MODEL]`: does this machine compute the model's logits right?

Prints the CPU's features, llama.cpp's build and the kernel path in use (with the load-time probe's
figure), then the largest |logit difference| of a 160-token prompt prefilled in one call, in pieces
of 1, 16, 32 and 128 tokens and in a joint batch, against each other and (where torch is installed)
against a float32 torch forward of the same weights. Exit status 1 when a figure is past tolerance.
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Callable, Optional

from ..correctness import reference as refcheck
from ..correctness.cpu_features import cpu_flags, cpu_name, describe
from ..correctness.kernels import PROBE_TOLERANCE

BETWEEN_TOLERANCE = PROBE_TOLERANCE
"""Largest accepted difference between ways of prefilling (the probe's tolerance)."""
REFERENCE_TOLERANCE = 2.0
"""Largest accepted difference from the float32 reference. Measured on a 2-core AVX2 CPU, bundled
SmolLM2-135M Q4_1 on llama.cpp: 1.02 (issue 25's AMX Xeon: ≤ 0.86 on correct paths, 11.4 on the
broken one). Models with random or unusual weights may need `--tolerance`."""


def say(line: str) -> None:
    print(line, flush=True)


def add_parser(sub) -> None:
    from ..models import DEFAULT_MODEL

    check = sub.add_parser("check", help="check that this CPU's kernels compute the model's logits right")
    check.add_argument("model", nargs="?", default=DEFAULT_MODEL, help=f"bundled:NAME, a folder or a .gguf (default {DEFAULT_MODEL})")
    check.add_argument("--backend", default="auto", choices=["auto", "torch", "mlx", "llamacpp"])
    check.add_argument("--tolerance", type=float, default=REFERENCE_TOLERANCE,
                       help=f"largest accepted difference from the float32 reference (default {REFERENCE_TOLERANCE:g})")
    check.add_argument("--no-reference", action="store_true", help="skip the float32 torch reference")


def run_check(args: argparse.Namespace) -> int:
    return 0 if check_model(args.model, args.backend, not args.no_reference, args.tolerance) else 1


def check_model(source: str, backend: str = "auto", reference: bool = True,
                tolerance: float = REFERENCE_TOLERANCE, say: Callable[[str], None] = say) -> bool:
    """Load `source`, print what `python -m engine check` prints through `say`; True when every
    figure is within tolerance (the app's self-test runs it too, without the reference)."""
    from ..engine import Engine
    from ..backends.native import llama_library
    from ..types import EngineConfig

    say(f"CPU: {cpu_name()}; {describe(cpu_flags())}")
    library = llama_library()
    if library.available:
        import llama_cpp

        say(f"llama.cpp: {library.detail}; built with {llama_cpp.llama_print_system_info().decode().strip()}")
    dtype = {} if backend == "llamacpp" else {"dtype": "float32"}
    engine = Engine.load(source, EngineConfig(backend=backend, max_context=1024, **dtype))
    try:
        say(f"model: {engine.model.name} on {engine.backend} ({engine.backend_reason})")
        if engine.placement_reason:
            say(f"device: {engine.device}{' · ' + engine.placement if engine.placement else ''} ({engine.placement_reason})")
        check = engine.kernel_check
        if check is not None:
            say(f"kernel path: {check.describe()}")
        tokens = refcheck.prompt_tokens(engine.tokenizer)
        logits = None
        if reference and importlib.util.find_spec("torch"):
            weights, config = refcheck.reference_source(engine.model)
            logits = refcheck.reference_logits(weights, config, tokens)
        rows = engine._call(lambda w: refcheck.compare(w.backend, tokens, logits))
    finally:
        engine.close()
    say(f"largest |logit difference|, {len(tokens)}-token prompt:")
    say(f"  {'prefilled':<22}{'vs one call':>14}{'vs float32 reference':>24}")
    for row in rows:
        say(f"  {row.label:<22}{_figure(row.vs_one_call):>14}{_figure(row.vs_reference):>24}")
    between, against = refcheck.worst(rows, "vs_one_call"), refcheck.worst(rows, "vs_reference")
    bad = between > BETWEEN_TOLERANCE or against > tolerance or (check is not None and not check.ok)
    say(f"{'FAILED' if bad else 'OK'}: ways of prefilling within {between:.3g} of each other (tolerance "
        f"{BETWEEN_TOLERANCE:g})" + ("" if logits is None else
                                     f", within {against:.3g} of the reference (tolerance {tolerance:g})"))
    return not bad


def _figure(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.3g}"

