"""Constrained decoding and log probabilities in the engine: a random-weight model still writes JSON
that validates, constrained and free sessions share a batched step, and bad grammars fail early."""

from __future__ import annotations

import json
import math
import threading

import jsonschema
import pytest

from engine import Constraint, Engine, EngineConfig, SamplingParams
from engine.errors import InvalidRequestError
from tests.conftest import BACKENDS

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "pet": {"enum": ["cat", "dog", "none"]},
        "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
    },
    "required": ["name", "age", "pet", "tags"],
}
HI = [{"role": "user", "content": "Describe a person."}]


@pytest.fixture(scope="module", params=BACKENDS)
def engine(tiny_models, request):
    """The mask is applied to float32 logits in the engine's sampler, so every backend gets it."""
    engine = Engine.load(str(tiny_models["llama"]), EngineConfig(backend=request.param, dtype="float32", max_context=512))
    yield engine
    engine.close()


def _reply(session, params, messages=HI):
    chunks = list(session.chat(messages, params))
    return "".join(c.text for c in chunks), chunks


@pytest.mark.parametrize("temperature", [0, 1.0])
def test_json_schema_reply_validates_and_ends_with_the_grammar(engine, temperature):
    with engine.open_session() as session:
        for seed in range(3):
            params = SamplingParams(temperature=temperature, seed=seed, max_tokens=200,
                                    constraint=Constraint.json_schema(PERSON, strict=True))
            text, chunks = _reply(session, params)
            jsonschema.validate(json.loads(text), Constraint.json_schema(PERSON, strict=True).schema())
            assert chunks[-1].finish_reason == "stop"
            assert chunks[-1].stats.generated_tokens < 200
            assert chunks[-1].stats.constraint_s > 0  # the grammar's own time is reported


def test_strict_schema_refuses_extra_properties_but_loose_one_allows_them():
    strict = json.loads(Constraint.json_schema({"type": "object", "properties": {"a": {"type": "integer"}}},
                                               strict=True).source)
    loose = json.loads(Constraint.json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}).source)
    assert strict["additionalProperties"] is False and "additionalProperties" not in loose


def test_json_object_gives_an_object(engine):
    with engine.open_session() as session:
        text, chunks = _reply(session, SamplingParams(temperature=0, max_tokens=300, constraint=Constraint.json_object()))
    if chunks[-1].finish_reason == "stop":
        assert isinstance(json.loads(text), dict)
    else:  # a random model may write a long object: it says so, and what it wrote is a JSON prefix
        assert chunks[-1].finish_reason == "length" and text.startswith("{")


def test_token_limit_before_the_grammar_completes_says_length(engine):
    schema = {"type": "object", "properties": {"text": {"type": "string", "minLength": 50}}, "required": ["text"]}
    with engine.open_session() as session:
        text, chunks = _reply(session, SamplingParams(temperature=0, max_tokens=5, constraint=Constraint.json_schema(schema)))
    assert chunks[-1].finish_reason == "length" and text.startswith('{"text": "')


def test_regex_and_lark_constraints(engine):
    with engine.open_session() as session:
        assert _reply(session, SamplingParams(temperature=0, constraint=Constraint.regex("(yes|no)")))[0] in ("yes", "no")
        text = _reply(session, SamplingParams(temperature=1.0, seed=3, constraint=Constraint.lark('start: "A" ("b" | "c")+ "!"')))[0]
        assert text[0] == "A" and text[-1] == "!" and set(text[1:-1]) <= {"b", "c"}


def test_batched_step_mixes_constrained_and_free_sessions(engine):
    """Four sessions decode together; the two constrained ones write valid JSON, the free ones are
    exactly what they write alone."""
    free_params = SamplingParams(temperature=0, max_tokens=24, ignore_stop=True)
    json_params = SamplingParams(temperature=0, max_tokens=200, constraint=Constraint.json_schema(PERSON, strict=True))
    with engine.open_session() as alone:
        expected_free = _reply(alone, free_params)[1]
    sessions = [engine.open_session() for _ in range(4)]
    try:
        streams = [s.chat(HI, json_params if i % 2 else free_params) for i, s in enumerate(sessions)]
        results: list = [None] * 4

        def drain(i):
            results[i] = list(streams[i])

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for s in sessions:
            s.close()
    assert engine._runner.worker is not None  # still serving
    for i, chunks in enumerate(results):
        if i % 2:
            jsonschema.validate(json.loads("".join(c.text for c in chunks)), PERSON)
        else:
            assert [t for c in chunks for t in c.token_ids] == [t for c in expected_free for t in c.token_ids]


@pytest.mark.parametrize("constraint, message", [
    (Constraint.lark("start: ("), "constraint is not valid"),
    (Constraint.regex("(unclosed"), "constraint is not valid"),
])
def test_bad_grammar_fails_before_anything_is_queued(engine, constraint, message):
    with engine.open_session() as session:
        with pytest.raises(InvalidRequestError, match=message):
            session.chat(HI, SamplingParams(constraint=constraint))
        assert not session.busy
        assert _reply(session, SamplingParams(temperature=0, max_tokens=3))[1][-1].finish_reason in ("stop", "length")


@pytest.mark.parametrize("bad, message", [
    ({"constraint": '{"type": "object"}'}, "constraint must be a Constraint"),
    ({"logprobs": 21}, "logprobs must be None or an integer in"),
    ({"logprobs": -1}, "logprobs must be None or an integer in"),
])
def test_bad_params_are_refused(bad, message):
    with pytest.raises(InvalidRequestError, match=message):
        SamplingParams(**bad).validate()


def test_schema_that_is_not_json_is_refused():
    with pytest.raises(InvalidRequestError, match="not valid JSON"):
        Constraint.json_schema("{nope")


def test_logprobs_come_from_the_sampled_distribution(engine):
    with engine.open_session() as session:
        greedy = _reply(session, SamplingParams(temperature=0, max_tokens=8, ignore_stop=True, logprobs=5))[1]
        for chunk in greedy:
            for lp in chunk.logprobs:
                assert lp.top[0][0] == lp.token_id and lp.top[0][1] == lp.logprob  # greedy picks the top
                assert sum(math.exp(x) for _, x in lp.top) <= 1 + 1e-9
                assert [x for _, x in lp.top] == sorted((x for _, x in lp.top), reverse=True)
        assert sum(len(c.logprobs) for c in greedy) == sum(len(c.token_ids) for c in greedy)
        # top_k=2: the distribution sampled from holds two tokens, so their probabilities sum to 1
        sampled = _reply(session, SamplingParams(temperature=1.0, top_k=2, seed=1, max_tokens=8, ignore_stop=True, logprobs=3))[1]
        for chunk in sampled:
            for lp in chunk.logprobs:
                assert len(lp.top) == 2 and math.isclose(sum(math.exp(x) for _, x in lp.top), 1.0)
                assert lp.token_id in (t for t, _ in lp.top)
        plain = _reply(session, SamplingParams(temperature=0, max_tokens=4))[1]
        assert all(c.logprobs == () for c in plain) and plain[-1].stats.constraint_s == 0


def test_logprobs_under_a_constraint_only_name_allowed_tokens(engine):
    with engine.open_session() as session:
        chunks = _reply(session, SamplingParams(temperature=0, logprobs=20, constraint=Constraint.regex("(yes|no)")))[1]
    first = next(c for c in chunks if c.logprobs).logprobs[0]
    texts = {engine.tokenizer.decode([t]) for t, _ in first.top}
    assert texts and all(("yes".startswith(t) or "no".startswith(t)) and t for t in texts)


def test_forced_tool_call_in_process(engine):
    """The engine's own API: tools rendered by Session.chat, a call forced by engine.tool_constraint,
    read back with engine.reply.toolcalls.parse."""
    from engine.reply.toolcalls import parse

    tools = [{"type": "function", "function": {"name": "add", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                         "b": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["a", "b"]}}}]
    with engine.open_session() as session:
        params = SamplingParams(temperature=0, max_tokens=200, constraint=engine.tool_constraint(tools, parallel=False))
        stream = session.chat([{"role": "user", "content": "Add 2 and 3."}], params, tools=tools)
        text = stream.text()
        content, calls = parse(engine.tool_format, text)
        assert [c.name for c in calls] == ["add"] and content == ""
        jsonschema.validate(json.loads(calls[0].arguments), tools[0]["function"]["parameters"])
        with pytest.raises(InvalidRequestError, match="tools must be a list"):
            session.chat(HI, tools=[{"type": "function"}])
        assert not session.busy
