"""A prompt longer than the context, on every API: refused with the numbers by default (each API's
error shape), or cut under the request's policy, and then said in the `truncated` field and the
X-Confab-Truncated header. The tiny engine's context is 256 tokens."""

from __future__ import annotations

import json

import openai
import pytest

from engine.reply.truncation import HEADER
from tests.server.helpers import client, http


def long_chat(turns: int = 12) -> list[dict]:
    messages = [{"role": "system", "content": "You are terse."}]
    for i in range(turns):
        messages += [{"role": "user", "content": f"Question number {i} is about the weather in a city."},
                     {"role": "assistant", "content": f"Answer number {i}: it is mild and dry there today."}]
    return messages + [{"role": "user", "content": "And now?"}]


def test_by_default_a_long_prompt_is_refused_with_the_numbers(serve, tiny_engine):
    server = serve(tiny_engine)
    with pytest.raises(openai.BadRequestError) as e:
        client(server).chat.completions.create(model=tiny_engine.source, messages=long_chat(), max_tokens=4)
    assert e.value.body["code"] == "context_length_exceeded"
    assert "this model's context is 256 tokens" in e.value.body["message"]


@pytest.mark.parametrize("policy", ["rolling", "middle"])
def test_chat_cuts_and_says_so(serve, tiny_engine, policy):
    server = serve(tiny_engine)
    with http(server) as h:
        reply = h.post("/v1/chat/completions", json={"messages": long_chat(), "max_tokens": 16, "temperature": 0,
                                                     "context_policy": policy})
    assert reply.status_code == 200
    cut = reply.json()["truncated"]
    assert cut["policy"] == policy and cut["dropped_messages"] > 0 and cut["context"] == 256
    assert cut["prompt_tokens"] + 16 <= 256 < cut["prompt_tokens_before"]
    assert reply.json()["usage"]["prompt_tokens"] == cut["prompt_tokens"]
    assert f"policy={policy}" in reply.headers[HEADER]


def test_middle_keeps_the_first_exchange(serve, tiny_engine):
    """What the model read is what a client sending only the kept messages gets (same tokens)."""
    server = serve(tiny_engine)
    messages = long_chat()
    with http(server) as h:
        cut = h.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 16, "temperature": 0,
                                                   "context_policy": "middle"}).json()
        dropped = cut["truncated"]["dropped_messages"]
        kept = messages[:3] + messages[3 + dropped:]
        same = h.post("/v1/chat/completions", json={"messages": kept, "max_tokens": 16, "temperature": 0}).json()
    assert same["usage"]["prompt_tokens"] == cut["usage"]["prompt_tokens"]
    assert same["choices"][0]["message"]["content"] == cut["choices"][0]["message"]["content"]
    assert same["truncated"] is None


def test_a_prompt_that_fits_says_nothing_was_cut(serve, tiny_engine):
    server = serve(tiny_engine)
    with http(server) as h:
        reply = h.post("/v1/chat/completions", json={"messages": long_chat(1), "max_tokens": 4,
                                                     "context_policy": "rolling"})
    assert reply.json()["truncated"] is None and HEADER not in reply.headers


def test_a_streamed_chat_says_it_in_the_header_and_the_chunks(serve, tiny_engine):
    server = serve(tiny_engine)
    with http(server) as h:
        with h.stream("POST", "/v1/chat/completions", json={
                "messages": long_chat(), "max_tokens": 4, "stream": True, "context_policy": "rolling"}) as reply:
            header = reply.headers[HEADER]
            chunks = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: {")]
    assert "policy=rolling" in header
    assert all(c["truncated"]["policy"] == "rolling" for c in chunks)


def test_completions_keep_the_end_of_a_long_prompt(serve, tiny_engine):
    server = serve(tiny_engine)
    prompt = list(range(5, 605))
    with http(server) as h:
        refused = h.post("/v1/completions", json={"prompt": prompt, "max_tokens": 4})
        reply = h.post("/v1/completions", json={"prompt": prompt, "max_tokens": 4, "context_policy": "rolling"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "context_length_exceeded"
    assert reply.status_code == 200
    cut = reply.json()["truncated"]
    assert (cut["prompt_tokens_before"], cut["dropped_messages"]) == (600, 0)
    assert reply.json()["usage"]["prompt_tokens"] == cut["prompt_tokens"] <= 252
    assert "policy=rolling" in reply.headers[HEADER]


def test_responses_truncation_auto_is_the_rolling_window(serve, tiny_engine):
    server = serve(tiny_engine)
    items = long_chat()[1:]
    with pytest.raises(openai.BadRequestError) as e:  # "disabled", OpenAI's default, refuses
        client(server).responses.create(model=tiny_engine.source, input=items, max_output_tokens=4)
    assert e.value.body["code"] == "context_length_exceeded"
    raw = client(server).responses.with_raw_response.create(model=tiny_engine.source, input=items,
                                                            max_output_tokens=4, truncation="auto")
    response = raw.parse()
    assert response.truncation == "auto" and "policy=rolling" in raw.headers[HEADER]
    assert response.model_extra["truncated"]["dropped_messages"] > 0
    assert response.usage.input_tokens == response.model_extra["truncated"]["prompt_tokens"]


def test_an_unknown_policy_is_a_clear_400(serve, tiny_engine):
    server = serve(tiny_engine)
    with http(server) as h:
        reply = h.post("/v1/chat/completions", json={"messages": long_chat(1), "context_policy": "shrink"})
    assert reply.status_code == 400 and "context_policy" in reply.json()["error"]["message"]


def _anthropic_messages(turns: int = 12) -> tuple[str, list[dict]]:
    chat = long_chat(turns)
    return chat[0]["content"], chat[1:]


def test_messages_refuse_a_long_prompt_in_anthropics_shape(serve, tiny_engine):
    server = serve(tiny_engine)
    system, messages = _anthropic_messages()
    with http(server) as h:
        reply = h.post("/v1/messages", json={"system": system, "messages": messages, "max_tokens": 4})
    assert reply.status_code == 400
    body = reply.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "this model's context is 256 tokens" in body["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_messages_cut_under_a_policy_and_say_so(serve, tiny_engine, stream):
    server = serve(tiny_engine)
    system, messages = _anthropic_messages()
    with http(server) as h:
        reply = h.post("/v1/messages", json={"system": system, "messages": messages, "max_tokens": 8,
                                             "temperature": 0, "context_policy": "rolling", "stream": stream})
    assert reply.status_code == 200
    assert "policy=rolling" in reply.headers[HEADER]
    if stream:
        start = next(json.loads(line[len("data: "):]) for line in reply.text.splitlines()
                     if line.startswith("data: ") and '"message_start"' in line)
        cut = start["message"]["truncated"]
    else:
        cut = reply.json()["truncated"]
        assert reply.json()["usage"]["input_tokens"] == cut["prompt_tokens"]
    assert cut["policy"] == "rolling" and cut["dropped_messages"] > 0
