"""Agents' traffic through the server on llama.cpp's shared K/V pool, with real clients on 127.0.0.1:
requests without `max_tokens` are admitted by what they hold, not the whole context; idle sessions
park to disk for new requests and continue as before on their next turn."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from engine import Engine, EngineConfig, SamplingParams
from tests.server.helpers import client
from tests.conftest import HEAD_DIM

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

PER_TOKEN = 2 * 2 * (HEAD_DIM + HEAD_DIM) * 2  # the tiny llama: layers × kv heads × (K + V head dims) × float16 bytes


@pytest.fixture(scope="module")
def tiny_gguf(tiny_models, tmp_path_factory):
    from engine.models.sources import bundled_gguf
    from tests.engine.gguf_from_hf import write_gguf_from_folder

    out = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    return write_gguf_from_folder(tiny_models["llama"], out, bundled_gguf("smollm2-135m-instruct"))


@pytest.fixture
def pool_engine(tiny_gguf):
    """Contexts of 256 tokens in a pool of 512 (600 tokens' budget; llama.cpp sizes it in 256s)."""
    engine = Engine.load(str(tiny_gguf), EngineConfig(backend="llamacpp", max_context=256,
                                                      memory_budget=600 * PER_TOKEN))
    assert engine.capacity().pool_tokens == 512
    yield engine
    engine.close()


def test_eight_concurrent_sdk_requests_without_max_tokens_all_succeed(serve, pool_engine):
    """Each may grow to the whole context (256), four pools' worth together: before, the fifth got 500."""
    server = serve(pool_engine)
    sdk = client(server)

    def ask(n: int):
        return sdk.chat.completions.create(model=pool_engine.source, temperature=0.8, stop=["\n"],
                                           messages=[{"role": "user", "content": f"Write a story number {n}."}])

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(ask, range(8)))
    assert [r.choices[0].finish_reason in ("stop", "length") for r in replies] == [True] * 8
    assert all(r.usage.completion_tokens > 0 for r in replies)


def test_idle_named_sessions_park_for_new_requests_and_continue_as_before(serve, pool_engine, tiny_gguf):
    server = serve(pool_engine)
    sdk = client(server)
    long = " ".join(f"word{i}" for i in range(60))  # about 200 tokens
    first: dict[str, str] = {}
    for i in range(6):  # six sessions of ~210 tokens each: 2.5 pools' worth, all idle
        reply = sdk.chat.completions.create(model=pool_engine.source, temperature=0, max_tokens=10,
                                            messages=[{"role": "user", "content": f"{i} {long}"}],
                                            extra_body={"session_id": f"agent-{i}"})
        first[f"agent-{i}"] = reply.choices[0].message.content
    fresh = sdk.chat.completions.create(model=pool_engine.source, temperature=0, max_tokens=10,
                                        messages=[{"role": "user", "content": "A new request."}])
    assert fresh.choices[0].message.content is not None
    # agent-0 was parked first (least recently used); its next turn comes back from its saved state
    history = [{"role": "user", "content": f"0 {long}"}, {"role": "assistant", "content": first["agent-0"]},
               {"role": "user", "content": "And then?"}]
    again = sdk.chat.completions.create(model=pool_engine.source, temperature=0, max_tokens=10, messages=history,
                                        extra_body={"session_id": "agent-0"})
    assert again.usage.prompt_tokens_details.cached_tokens > 150  # restored, not read again
    reference = Engine.load(str(tiny_gguf), EngineConfig(backend="llamacpp", max_context=256))
    try:
        with reference.open_session() as s:
            greedy = SamplingParams(temperature=0, max_tokens=10)
            assert s.chat(history[:1], greedy).text() == first["agent-0"]
            assert s.chat(history, greedy).text() == again.choices[0].message.content
    finally:
        reference.close()


@pytest.mark.parametrize("share", [True, False], ids=["sharing", "not-sharing"])
def test_a_sub_agent_on_its_parents_system_prompt_leaves_the_parents_session_whole(serve, tiny_gguf, share):
    """Where the engine shares prefixes, a sub-agent with its parent's system prompt opens a session
    of its own (taking the prefix's cells) instead of the parent's idle one, so the parent's next
    request finds its whole history; without sharing, reusing the parent's cells is still cheaper."""
    engine = Engine.load(str(tiny_gguf), EngineConfig(backend="llamacpp", max_context=512, max_sessions=4,
                                                      share_prefixes=share))
    try:
        sdk = client(serve(engine))
        system = {"role": "system", "content": " ".join(f"rule{i}" for i in range(70))}  # ~230 tokens

        def ask(messages):
            return sdk.chat.completions.create(model=engine.source, temperature=0, max_tokens=8, messages=messages)

        task = "Fix the parser: " + " ".join(f"step{i}" for i in range(25))  # ~80 tokens of its own
        parent = [system, {"role": "user", "content": task}]
        first = ask(parent)
        sub = ask([system, {"role": "user", "content": "List the callers."}])
        assert sub.usage.prompt_tokens_details.cached_tokens > 200, "the system prompt is not read again"
        follow = parent + [{"role": "assistant", "content": first.choices[0].message.content},
                           {"role": "user", "content": "Now run the tests."}]
        again = ask(follow)
        kept = again.usage.prompt_tokens_details.cached_tokens
        if share:
            assert kept >= first.usage.prompt_tokens - 2, "the parent's history was cut by the sub-agent"
        else:
            assert kept < first.usage.prompt_tokens - 2  # the old trade: one session, its tail read again
    finally:
        engine.close()
