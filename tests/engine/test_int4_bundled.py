"""On the bundled Q4_1 model, the 4-bit weights answer as the dequantized (dense) weights do."""

from __future__ import annotations

from engine import SamplingParams

PROMPTS = [
    "What is the capital of France?", "Name three primary colors.", "How many legs does a spider have?",
    "Write a haiku about the sea.", "What is 12 times 7?", "Give me a synonym for happy.",
    "Who wrote Romeo and Juliet?", "What does a thermometer measure?", "List two planets.",
    "Translate 'good morning' into Spanish.", "What is the boiling point of water in Celsius?",
    "Suggest a name for a pet cat.", "What is photosynthesis?", "Describe a rainbow in one sentence.",
    "What is the opposite of cold?", "How many days are in a week?", "What language is spoken in Brazil?",
    "Tell me a fun fact about elephants.", "What is the largest ocean?", "Explain what a verb is.",
]
TOKENS = 64


def _replies(engine) -> list[list[int]]:
    """Greedy replies to every prompt, all generating at once (batched: the test stays short)."""
    sessions = [engine.open_session() for _ in PROMPTS]
    params = SamplingParams(temperature=0, max_tokens=TOKENS)
    streams = [s.chat([{"role": "user", "content": p}], params) for s, p in zip(sessions, PROMPTS)]
    replies = [[t for chunk in stream for t in chunk.token_ids] for stream in streams]
    for s in sessions:
        s.close()
    return replies


def test_int4_greedy_replies_match_the_dequantized_model(make_engine):
    int4 = make_engine("bundled:smollm2-135m-instruct", "torch", dtype="float32")
    assert int4.quantized.startswith("int4: 210 of 211 linear layers")
    got = _replies(int4)
    int4.close()
    dense = make_engine("bundled:smollm2-135m-instruct", "torch", dtype="float32", quantize="none")
    want = _replies(dense)
    same = sum(a == b for a, b in zip(got, want))
    assert same >= 18, f"{same} of {len(PROMPTS)} replies equal"
