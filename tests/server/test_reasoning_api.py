"""A thinking model's reasoning through the API, read with the official openai client: apart from
the answer as `reasoning_content` in `message` and in each `delta` (as llama.cpp's server and
DeepSeek's API send it), and an earlier reply's `reasoning_content` accepted back."""

from __future__ import annotations

import pytest

from engine import Engine, EngineConfig
from tests.engine.helpers import with_template
from tests.server.helpers import client

ASK = [{"role": "user", "content": "What is 2+2?"}]


@pytest.fixture(scope="module")
def thinking_engine(tiny_models, tmp_path_factory):
    """The tiny model with DeepSeek-R1's template, which opens <think> in the prompt: a random
    model never closes it, so its whole reply is reasoning."""
    folder = with_template(tiny_models["llama"], tmp_path_factory.mktemp("r1") / "tiny", "deepseek-r1-distill")
    engine = Engine.load(str(folder), EngineConfig(backend="torch", dtype="float32", max_context=256))
    yield engine
    engine.close()


def test_reasoning_comes_apart_in_message_and_in_deltas(serve, thinking_engine):
    api = client(serve(thinking_engine))
    whole = api.chat.completions.create(model=thinking_engine.source, messages=ASK, temperature=0, max_tokens=10)
    message = whole.choices[0].message
    assert message.content == ""
    assert message.model_extra["reasoning_content"].strip()
    chunks = list(api.chat.completions.create(model=thinking_engine.source, messages=ASK, temperature=0,
                                              max_tokens=10, stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.model_extra.get("reasoning_content") or "" for d in deltas) == message.model_extra["reasoning_content"]
    assert "".join(d.content or "" for d in deltas) == ""
    assert sum(1 for d in deltas if d.model_extra.get("reasoning_content")) > 2  # streamed, not one block


def test_an_earlier_replys_reasoning_content_is_accepted_back(serve, thinking_engine):
    api = client(serve(thinking_engine))
    history = ASK + [{"role": "assistant", "content": "4", "reasoning_content": "adding"},
                     {"role": "user", "content": "And 3+3?"}]
    reply = api.chat.completions.create(model=thinking_engine.source, messages=history, temperature=0, max_tokens=4)
    assert reply.choices[0].finish_reason == "length"


def test_a_model_that_does_not_think_sends_no_reasoning_content(serve, tiny_engine):
    whole = client(serve(tiny_engine)).chat.completions.create(
        model=tiny_engine.source, messages=ASK, temperature=0, max_tokens=6)
    assert "reasoning_content" not in (whole.choices[0].message.model_extra or {})
