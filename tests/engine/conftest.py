"""Engine fixtures: an engine factory that closes what it opened, and greedy helpers.

Engine tests run on every backend: torch and MLX load the tiny Hugging Face folders, llama.cpp the
same weights written as a float32 GGUF file (`gguf_source`), with the same tokenizer and template.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable

import pytest

from engine import Engine, EngineConfig
from tests.conftest import BACKENDS
from tests.engine.gguf_from_hf import write_gguf_from_folder

ENGINE_BACKENDS = BACKENDS + (["llamacpp"] if importlib.util.find_spec("llama_cpp") else [])


@pytest.fixture(params=ENGINE_BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def gguf_source(tmp_path_factory) -> Callable[[Path], Path]:
    """gguf_source(folder) -> a .gguf of that tiny folder's weights (written once per folder)."""
    from engine.models.sources import bundled_gguf

    written: dict[Path, Path] = {}
    root = tmp_path_factory.mktemp("gguf-of-tiny")

    def get(folder: Path) -> Path:
        folder = Path(folder)
        if folder not in written:
            out = root / f"{len(written)}-{folder.name}.gguf"
            written[folder] = write_gguf_from_folder(folder, out, bundled_gguf("smollm2-135m-instruct"))
        return written[folder]

    return get



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
        "256-token chunks; test_llamacpp_pool.py checks its capacity in tokens and bytes")
NOT_ON_LLAMACPP = {
    "test_estimate_matches_a_full_session": POOL,
    "test_estimate_bounds_a_session_past_one_chunk": POOL,
    "test_max_sessions_from_memory_budget": POOL,
    "test_default_budget_is_a_share_of_free_memory": POOL,
    "test_opening_past_max_sessions_fails_with_numbers": POOL,
    "test_estimate_matches_loaded_engine": "the pre-load estimate is of a torch/MLX folder's per-session "
                                           "buffers; llama.cpp's pool is checked in test_llamacpp_pool.py",
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
