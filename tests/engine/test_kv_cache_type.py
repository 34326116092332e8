"""The K/V cache type chosen at load (llama.cpp's cache_type_k / cache_type_v): a quantized cache
takes the memory its type says, and a session's reply is still the same alone and beside others."""

from __future__ import annotations

import pytest

from engine import EngineConfig, InvalidRequestError, SamplingParams
from tests.engine.helpers import prompt_ids

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

GREEDY = SamplingParams(temperature=0, max_tokens=8, ignore_stop=True)
PROMPTS = ["The river ran", "Tell me about apples.", "def add(a, b):", "A list of colours:"]


def _tokens(session, ids: list[int]) -> list[int]:
    return [t for chunk in session.generate(ids, GREEDY) for t in chunk.token_ids]


@pytest.fixture(scope="module")
def source(tiny_models, gguf_source):
    return gguf_source(tiny_models["llama"])


def test_a_quantized_cache_holds_a_session_in_less_memory(make_engine, source):
    f16 = make_engine(source, "llamacpp", max_context=512).capacity().bytes_per_session
    keys = make_engine(source, "llamacpp", max_context=512, cache_type_k="q8_0").capacity().bytes_per_session
    both = make_engine(source, "llamacpp", max_context=512, cache_type_k="q8_0",
                       cache_type_v="q8_0").capacity().bytes_per_session
    assert keys == pytest.approx(f16 * (34 / 32 + 2) / 4, rel=0.01)
    assert both == pytest.approx(f16 * 34 / 32 / 2, rel=0.01)


@pytest.mark.parametrize("k, v", [("q8_0", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0")])
def test_a_reply_on_a_quantized_cache_is_the_same_alone_and_beside_others(make_engine, source, k, v):
    engine = make_engine(source, "llamacpp", max_context=512, cache_type_k=k, cache_type_v=v)
    alone = _tokens(engine.open_session(), prompt_ids(engine, PROMPTS[0]))
    # all four streams queued before any is read: the engine steps them in joint rounds
    streams = [engine.open_session().generate(prompt_ids(engine, p), GREEDY) for p in PROMPTS]
    together = [[t for chunk in stream for t in chunk.token_ids] for stream in streams]
    assert together[0] == alone
    assert len(alone) == GREEDY.max_tokens


def test_an_unknown_cache_type_is_refused_with_the_types_there_are():
    with pytest.raises(InvalidRequestError, match="f16, q8_0, q4_0"):
        EngineConfig(cache_type_k="q5_1")
    with pytest.raises(InvalidRequestError, match="cache_type_v"):
        EngineConfig(cache_type_v=8)


def test_a_state_saved_with_one_cache_type_is_refused_by_another_in_words(make_engine, source, tmp_path):
    from engine import StateFileError

    f16 = make_engine(source, "llamacpp", max_context=512)
    session = f16.open_session()
    _tokens(session, prompt_ids(f16, PROMPTS[0]))
    session.save_state(tmp_path / "s.state")
    q8 = make_engine(source, "llamacpp", max_context=512, cache_type_k="q8_0")
    with pytest.raises(StateFileError, match="f16/f16 .*this engine caches q8_0/f16"):
        q8.open_session(restore_from=tmp_path / "s.state")
    assert f16.open_session(restore_from=tmp_path / "s.state").tokens == session.tokens


def test_prompt_cache_blocks_are_read_only_by_an_engine_of_the_same_cache_type(make_engine, source, tmp_path):
    prompt = prompt_ids(make_engine(source, "llamacpp", max_context=512), " ".join(PROMPTS) * 12)[:400]
    cache = {"prefix_cache_dir": str(tmp_path / "prompts"), "prefix_cache_bytes": 1 << 30}

    def read(**config) -> int:
        engine = make_engine(source, "llamacpp", max_context=512, **config, **cache)
        chunks = list(engine.open_session().generate(prompt, GREEDY))
        return chunks[-1].stats.prefilled_tokens

    assert read() == len(prompt)  # written by an f16 engine
    assert read(cache_type_k="q8_0") == len(prompt), "a q8_0 engine read f16 blocks"
    assert read() < len(prompt) // 2  # the same type reads them back
