"""response_format and logprobs over HTTP with the official openai client, on the tiny random model:
structured replies parse and validate, and a reply cut by the token limit says so."""

from __future__ import annotations

import json
import math

import jsonschema
import openai
import pytest

from tests.server.helpers import chat_body, client, http

ORDER = {
    "type": "object",
    "properties": {
        "item": {"type": "string", "maxLength": 10},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
        "express": {"type": "boolean"},
        "size": {"enum": ["S", "M", "L"]},
    },
    "required": ["item", "quantity", "express", "size"],
    "additionalProperties": False,
}
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "order", "strict": True, "schema": ORDER}}
ASK = [{"role": "user", "content": "Order something."}]


def _create(server, **kw):
    body = {"model": server.host.engine.source, "messages": ASK, "temperature": 0, "max_tokens": 200}
    return client(server).chat.completions.create(**{**body, **kw})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_json_schema_reply_parses_and_validates(serve, tiny_engine, seed):
    reply = _create(serve(tiny_engine), response_format=SCHEMA_FORMAT, temperature=1.0, seed=seed)
    assert reply.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(reply.choices[0].message.content), ORDER)


def test_json_schema_streamed_is_the_same_text(serve, tiny_engine):
    server = serve(tiny_engine)
    whole = _create(server, response_format=SCHEMA_FORMAT).choices[0].message.content
    chunks = list(_create(server, response_format=SCHEMA_FORMAT, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == whole
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["stop"]


def test_json_object_reply_is_an_object_or_says_it_was_cut(serve, tiny_engine):
    choice = _create(serve(tiny_engine), response_format={"type": "json_object"}, max_tokens=200).choices[0]
    if choice.finish_reason == "stop":
        assert isinstance(json.loads(choice.message.content), dict)
    else:
        assert choice.finish_reason == "length" and choice.message.content.startswith("{")


def test_token_limit_inside_the_schema_says_length(serve, tiny_engine):
    choice = _create(serve(tiny_engine), response_format=SCHEMA_FORMAT, max_tokens=3).choices[0]
    assert choice.finish_reason == "length"


def test_parse_helper_of_the_sdk(serve, tiny_engine):
    """The SDK's own structured-output helper (pydantic model in, parsed object out)."""
    from pydantic import BaseModel, Field

    class Pet(BaseModel):
        kind: str = Field(max_length=8)
        legs: int = Field(ge=0, le=8)

    server = serve(tiny_engine)
    reply = client(server).chat.completions.parse(model=server.host.engine.source, messages=ASK, temperature=0,
                                                  max_tokens=100, response_format=Pet)
    assert isinstance(reply.choices[0].message.parsed, Pet)


@pytest.mark.parametrize("body, message", [
    ({"response_format": {"type": "json_schema"}}, "json_schema needs json_schema.schema"),
    ({"response_format": {"type": "xml"}}, "response_format"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}}},
     "constraint is not valid"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"top_logprobs": 2}, "top_logprobs needs logprobs"),
])
def test_bad_structured_requests_are_refused(serve, tiny_engine, body, message):
    server = serve(tiny_engine)
    with http(server) as h:
        r = h.post("/v1/chat/completions", json=chat_body(**body))
    assert r.status_code == 400 and message in r.json()["error"]["message"]
    with http(server) as h:  # the server goes on serving
        assert h.post("/v1/chat/completions", json=chat_body()).status_code == 200


def test_chat_logprobs_whole_and_streamed(serve, tiny_engine):
    server = serve(tiny_engine)
    reply = _create(server, max_tokens=6, logprobs=True, top_logprobs=3, extra_body={"ignore_eos": True})
    entries = reply.choices[0].logprobs.content
    assert len(entries) == reply.usage.completion_tokens == 6
    assert "".join(e.token for e in entries) == reply.choices[0].message.content
    for e in entries:  # greedy: the chosen token is the most likely one
        assert len(e.top_logprobs) == 3 and e.top_logprobs[0].token == e.token
        assert e.top_logprobs[0].logprob == e.logprob <= 0
    chunks = list(_create(server, max_tokens=6, logprobs=True, top_logprobs=3, stream=True,
                          extra_body={"ignore_eos": True}))
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
    assert [e.token for e in streamed] == [e.token for e in entries]
    # a warm pooled session computes the prompt in other chunks: equal up to float32 rounding
    assert all(math.isclose(a.logprob, b.logprob, abs_tol=1e-3) for a, b in zip(streamed, entries))
    plain = _create(server, max_tokens=3)
    assert plain.choices[0].logprobs is None


def test_logprobs_follow_top_p_and_the_mask(serve, tiny_engine):
    server = serve(tiny_engine)
    narrow = _create(server, max_tokens=4, temperature=1.0, top_p=0.01, seed=0, logprobs=True, top_logprobs=5)
    for e in narrow.choices[0].logprobs.content:  # top_p this small keeps one token: probability 1
        assert e.logprob == 0.0 and [t.token for t in e.top_logprobs] == [e.token]
    masked = _create(server, max_tokens=50, response_format=SCHEMA_FORMAT, logprobs=True, top_logprobs=5)
    first = masked.choices[0].logprobs.content[0]
    assert first.token == '{"' and first.logprob == 0.0  # the schema leaves one way to begin


def test_completions_logprobs(serve, tiny_engine):
    server = serve(tiny_engine)
    reply = client(server).completions.create(model=server.host.engine.source, prompt="Once upon a time",
                                              max_tokens=5, temperature=0, logprobs=2, extra_body={"ignore_eos": True})
    lp = reply.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 5
    assert "".join(lp.tokens) == reply.choices[0].text
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(5)]
    for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert len(top) == 2 and math.isclose(max(top.values()), logprob)
    with pytest.raises(openai.BadRequestError):
        client(server).completions.create(model=server.host.engine.source, prompt="x", logprobs=21)
