"""Engine fixtures: an engine factory that closes what it opened, and greedy helpers.

Engine tests run on every backend: torch and MLX load the tiny Hugging Face folders, llama.cpp the
same weights written as a float32 GGUF file (`gguf_source`), with the same tokenizer and template.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Callable

import pytest

from engine import Engine, EngineConfig
from tests.conftest import BACKENDS
from tests.engine.gguf_from_hf import write_gguf_from_folder

ENGINE_BACKENDS = BACKENDS + (["llamacpp"] if importlib.util.find_spec("llama_cpp") else [])
VOCAB_ONLY = "CONFAB_TEST_VOCAB_GGUF"
"""A GGUF holding only the bundled model's tokenizer and chat template (packaging/gpu_proof.py makes one):
with CONFAB_TEST_TOKENIZER, the llama.cpp tests of tiny models run on a machine without the bundled model."""


@pytest.fixture(params=ENGINE_BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def gguf_source(tmp_path_factory) -> Callable[[Path], Path]:
    """gguf_source(folder) -> a .gguf of that tiny folder's weights (written once per folder)."""
    from engine.models.sources import bundled_gguf

    written: dict[Path, Path] = {}
    root = tmp_path_factory.mktemp("gguf-of-tiny")
    vocab = os.environ.get(VOCAB_ONLY)

    def get(folder: Path) -> Path:
        folder = Path(folder)
        if folder not in written:
            out = root / f"{len(written)}-{folder.name}.gguf"
            tokenizer = Path(vocab) if vocab else bundled_gguf("smollm2-135m-instruct")
            written[folder] = write_gguf_from_folder(folder, out, tokenizer)
        return written[folder]

    return get



@pytest.fixture
def source_for(gguf_source) -> Callable[[Path, str], Path]:
    """source_for(folder, backend) -> what that backend loads for a tiny folder (llama.cpp: its GGUF)."""
    return lambda folder, backend: gguf_source(folder) if backend == "llamacpp" else Path(folder)


@pytest.fixture
def make_engine(gguf_source) -> Callable[..., Engine]:
    """make_engine(source, backend, **config) -> Engine in float32 (llama.cpp: the GGUF of a tiny
    folder, in the formats it stores); all closed at teardown."""
    opened: list[Engine] = []

    def make(source, backend: str, **config) -> Engine:
        if backend == "llamacpp":
            config.pop("dtype", None)
            config.pop("quantize", None)
            if Path(source).is_dir():
                source = gguf_source(source)
        else:
            config.setdefault("dtype", "float32")
        config.setdefault("max_context", 1024)
        engine = Engine.load(str(source), EngineConfig(backend=backend, **config))
        opened.append(engine)
        return engine

    yield make
    for engine in opened:
        engine.close()


@pytest.fixture
def tiny_engine(make_engine, tiny_models, backend) -> Engine:
    return make_engine(tiny_models["llama"], backend)


POOL = ("llama.cpp holds K/V in one shared float16 pool sized at load, not per-session buffers grown in "
        "256-token chunks; test_llamacpp.py checks its capacity in tokens and bytes")
NOT_ON_LLAMACPP = {
    "test_estimate_matches_a_full_session": POOL,
    "test_estimate_bounds_a_session_past_one_chunk": POOL,
    "test_max_sessions_from_memory_budget": POOL,
    "test_default_budget_is_a_share_of_free_memory": POOL,
    "test_opening_past_max_sessions_fails_with_numbers": POOL,
    "test_estimate_matches_loaded_engine": "the pre-load estimate is of a torch/MLX folder's per-session "
                                           "buffers; llama.cpp's pool is checked in test_llamacpp.py",
    "test_the_budget_caps_a_configured_max_sessions": POOL,
    "test_a_budget_that_cannot_hold_one_session_is_refused_at_load": POOL,
    "test_max_context_above_the_models_limit_is_clamped_with_a_message": "edits a folder's config.json; a "
        "GGUF's context limit is read from the file (the clamp itself is the same code)",
    "test_an_unsupported_model_family_is_refused_by_name": "edits a folder's config.json; llama.cpp loads only "
        ".gguf files and names an architecture it does not know itself",
    "test_a_failed_batch_split_poisons_the_running_replies": "llama.cpp's sessions are sequences of one "
        "context: nothing is merged or split, so there is no split to fail",
    "test_chat_streams_replies_and_keeps_context": "the bundled Q4_1 model, greedy, with the template's system "
        "prompt, answers 'L'Étoile, la Cité…' on llama.cpp (llama-cpp-python's own Llama gives the same tokens "
        "for the same ids); test_llamacpp.py runs the chat command on llama.cpp",
    "test_second_chat_turn_prefills_only_its_suffix": "asserts the bundled model answers 'Paris'; on llama.cpp "
        "it answers 'L'Étoile…' (see test_chat_streams_replies_and_keeps_context); the suffix-only prefill is "
        "checked on the tiny model by the other warm-resume tests",
    "test_bundled_reply_stops_at_end_of_turn": "the bundled Q4_1 model on llama.cpp does not end 'Say hello.' "
        "within 60 greedy tokens; its stop tokens equal torch's and a reply stops at one "
        "(test_llamacpp.py)",
    "test_sliding_window_state_restores_exactly": "the tiny sliding-window models are folders whose window only "
        "transformers (qwen3) or mlx-lm (llama) read; the test GGUF writer has no sliding-window model",
    "test_truncated_safetensors_is_refused": "a folder's safetensors check; llama.cpp loads only .gguf files "
        "(test_llamacpp.py refuses a truncated GGUF)",
    "test_sliding_window_model_falls_back_to_per_session_steps": "llama.cpp steps sliding-window sequences "
                                                                  "in the same joint decode: there is no fallback",
}
"""Engine tests that check another backend's memory layout, deselected on llama.cpp with the reason."""


def pytest_collection_modifyitems(config, items):
    keep, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        reason = NOT_ON_LLAMACPP.get(item.originalname) if params else None
        if reason and params.params.get("backend") == "llamacpp":
            dropped.append(item)
            config._llamacpp_deselected = getattr(config, "_llamacpp_deselected", []) + [(item.nodeid, reason)]
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for nodeid, reason in getattr(config, "_llamacpp_deselected", []):
        terminalreporter.write_line(f"deselected {nodeid}: {reason}")


@pytest.fixture
def draft_everything(monkeypatch):
    """Every proposed draft goes into the round (up to its room), whatever it is likely to be worth: for
    tests of verification and rollback, which need drafts, many of them wrong, not the policy's choice."""
    from engine.drafts.speculative import Speculator

    def take_all(candidates, sessions, rows, ratio, room, limit):
        taken = [0] * sessions
        for _, i in candidates[:max(room, 0)]:
            taken[i] += 1
        return taken

    monkeypatch.setattr(Speculator, "_allot", staticmethod(take_all))


QUIET_ROW_COST = 1.1
"""One more row's cost against a round's fixed cost as measured on a quiet 2-core machine with the
bundled model (engine/drafts/model_cost.py)."""


@pytest.fixture
def quiet_row_cost(monkeypatch):
    """The drafting policy weighs rows as on a quiet machine, whatever else this one runs: what it
    drafts is then a matter of the drafts' odds, not of the suite's neighbours. (The fit, measured
    under a busy neighbour, once made the policy skip drafts a quiet machine takes: 14 accepted, not 15+.)"""
    from engine.drafts.model_cost import RowCost

    monkeypatch.setattr(RowCost, "ratio", lambda self: QUIET_ROW_COST)


@pytest.fixture(scope="session")
def vision_model(tokenizer_folder) -> Path:
    """The tiny vision model's GGUF, with its mmproj-model.gguf beside it (engine/bench/vision_model.py):
    skipped only where this llama.cpp has no libmtmd, and failed instead under CONFAB_REQUIRE_LLAMA
    (CI builds libmtmd: there the image tests must run)."""
    from engine.bench.vision_model import tiny_vision_model

    require_libmtmd()
    return tiny_vision_model(tokenizer_folder) / "model.gguf"


def require_libmtmd() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        why = "llama-cpp-python is not installed"
    else:
        from engine.backends.llamacpp_vision import library

        why = None if library() is not None else "this llama.cpp build has no libmtmd (built with -DLLAVA_BUILD=OFF)"
    if why is None:
        return
    if os.environ.get("CONFAB_REQUIRE_LLAMA", "") not in ("", "0"):
        pytest.fail(f"{why}, and CONFAB_REQUIRE_LLAMA is set: bootstrap builds it with libmtmd, so images must be tested")
    pytest.skip(f"{why}: images cannot be tested")


@pytest.fixture
def vision_engine(make_engine, vision_model) -> Engine:
    """The tiny vision model on llama.cpp, its projector found beside it."""
    return make_engine(vision_model, "llamacpp", max_context=1024)


@pytest.fixture(scope="session")
def mrope_model(tokenizer_folder) -> Path:
    """The tiny Qwen2-VL-shaped model's GGUF, its mmproj-model.gguf beside it: its images take M-RoPE
    positions, fewer than their tokens (engine/backends/llamacpp_positions.py)."""
    from engine.bench.vision_model import TINY_QWEN2VL, tiny_vision_model

    require_libmtmd()
    return tiny_vision_model(tokenizer_folder, TINY_QWEN2VL, family="qwen2vl") / "model.gguf"


@pytest.fixture
def mrope_engine(make_engine, mrope_model) -> Engine:
    """The tiny Qwen2-VL-shaped model on llama.cpp, its projector found beside it."""
    return make_engine(mrope_model, "llamacpp", max_context=1024)
