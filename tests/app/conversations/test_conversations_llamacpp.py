"""The app's suspend and restore, unchanged, on the llama.cpp backend: a conversation moved to disk
and back (also across an engine restart) continues with the tokens of one that never left."""

from __future__ import annotations

import pytest

from tests.app.engine_fixtures import make_engine  # noqa: F401 (fixture)
from tests.app.conversations.test_conversations_restore import (  # noqa: F401 (tests, run here on llama.cpp)
    test_restore_after_a_restart_of_the_engine,
    test_suspended_and_restored_conversation_continues_with_the_same_greedy_tokens,
)

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")


@pytest.fixture
def backend() -> str:
    return "llamacpp"


@pytest.fixture(scope="module")
def tiny_models(tiny_llama_other_seed, tmp_path_factory) -> dict:
    """A tiny llama's weights as a GGUF file (what llama.cpp loads), under the name the tests use."""
    from engine.models.sources import bundled_gguf
    from tests.engine.gguf_from_hf import write_gguf_from_folder

    out = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    return {"llama": write_gguf_from_folder(tiny_llama_other_seed, out, bundled_gguf("smollm2-135m-instruct"))}
