"""Tool calls through the official openai client on tiny random-weight models with real templates:
forced calls validate against their function's schema, stream as delta.tool_calls, and tool results
go back through the model's own template."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest

from tests.server.helpers import client, http
from tests.server.tool_fixtures import CLOCK, SCHEMAS, TOOLS, WEATHER, family, tool_engines  # noqa: F401

ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def _create(server, **kw):
    body = {"model": server.host.engine.source, "messages": ASK, "tools": TOOLS, "temperature": 0, "max_tokens": 500}
    return client(server).chat.completions.create(**{**body, **kw})


def _check_calls(calls, names=("get_weather", "get_time")):
    assert calls
    for call in calls:
        assert call.type == "function" and call.id and call.function.name in names
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def test_the_template_family_is_read_from_the_template(tool_engines):
    assert {f: e.tool_format for f, e in tool_engines.items()} == {
        "hermes": "hermes", "llama3": "llama3", "mistral": "mistral", "plain": "hermes"}


@pytest.mark.parametrize("seed", [0, 1])
def test_required_gives_calls_whose_arguments_validate(serve, tool_engines, family, seed):
    server = serve(tool_engines[family])
    reply = _create(server, tool_choice="required", temperature=1.0, seed=seed)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    _check_calls(choice.message.tool_calls)
    assert reply.usage.completion_tokens > 0 and reply.usage.prompt_tokens > 0


def test_named_choice_calls_that_function(serve, tool_engines, family):
    server = serve(tool_engines[family])
    reply = _create(server, tool_choice={"type": "function", "function": {"name": "get_time"}})
    calls = reply.choices[0].message.tool_calls
    assert reply.choices[0].finish_reason == "tool_calls" and len(calls) == 1
    _check_calls(calls, names=("get_time",))


def test_streamed_calls_match_the_whole_reply(serve, tool_engines, family):
    server = serve(tool_engines[family])
    whole = _create(server, tool_choice="required").choices[0].message.tool_calls
    chunks = list(_create(server, tool_choice="required", stream=True, stream_options={"include_usage": True}))
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    calls: dict[int, list] = {}  # as clients assemble them: id and name first, then argument pieces
    for d in deltas:
        if d.id:
            assert d.index not in calls and d.type == "function" and d.function.name
            calls[d.index] = [d.function.name, ""]
        calls[d.index][1] += d.function.arguments or ""
    assert list(calls) == list(range(len(whole)))
    assert [(n, json.loads(a)) for n, a in calls.values()] == [
        (c.function.name, json.loads(c.function.arguments)) for c in whole]
    assert len(deltas) > len(whole)  # the arguments arrive in pieces, after the name
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert reasons == ["tool_calls"]
    assert chunks[-1].usage.completion_tokens > 0


def test_parallel_tool_calls_false_gives_one_call(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    for seed in range(3):
        reply = _create(server, tool_choice="required", parallel_tool_calls=False, temperature=1.0, seed=seed)
        assert len(reply.choices[0].message.tool_calls) == 1


def test_tool_results_go_back_through_the_template(serve, tool_engines, family):
    """A call and its result in the history: the server renders them with the model's template and
    answers; tool_choice none reads no calls from the reply."""
    engine = tool_engines[family]
    server = serve(engine)
    call = _create(server, tool_choice={"type": "function", "function": {"name": "get_weather"}}).choices[0].message
    history = ASK + [{"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in call.tool_calls]},
                     {"role": "tool", "tool_call_id": call.tool_calls[0].id, "content": "sunny, 21 degrees"}]
    prompt = engine.render_chat(history, TOOLS)
    assert "sunny, 21 degrees" in prompt and "get_weather" in prompt and call.tool_calls[0].function.name in prompt
    reply = _create(server, messages=history, tool_choice="none", max_tokens=8)
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.choices[0].message.tool_calls is None and isinstance(reply.choices[0].message.content, str)


def test_mistral_ids_are_mapped_to_what_its_template_requires(tool_engines):
    history = ASK + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_abcdefghijklmnop", "type": "function", "function": {"name": "get_time", "arguments": '{"zone": "UTC"}'}}]},
        {"role": "tool", "tool_call_id": "call_abcdefghijklmnop", "content": "12:00"}]
    prompt = tool_engines["mistral"].render_chat(history, TOOLS)
    assert '[TOOL_CALLS][{"name": "get_time", "arguments": {"zone": "UTC"}, "id": "' in prompt
    assert "12:00" in prompt and "call_abcdefghijklmnop" not in prompt


def test_auto_reads_no_call_from_plain_text(serve, tool_engines):
    reply = _create(serve(tool_engines["plain"]), tool_choice="auto", max_tokens=6, stop=["<tool_call>"])
    choice = reply.choices[0]
    assert choice.message.tool_calls is None and choice.finish_reason in ("stop", "length")


def test_calls_keep_the_session_warm(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    first = _create(server, tool_choice="required", extra_body={"session_id": "agent"})
    call = first.choices[0].message.tool_calls[0]
    history = ASK + [{"role": "assistant", "tool_calls": [call.model_dump()]},
                     {"role": "tool", "tool_call_id": call.id, "content": "rain"}]
    second = _create(server, messages=history, tool_choice="required", extra_body={"session_id": "agent"})
    assert second.choices[0].finish_reason == "tool_calls"
    assert second.usage.prompt_tokens_details.cached_tokens > first.usage.prompt_tokens // 2


@pytest.mark.parametrize("extra, message", [
    ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "not among the tools"),
    ({"tools": None, "tool_choice": "required"}, "tool_choice needs tools"),
    ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "tools.0.function.name"),
    ({"messages": ASK + [{"role": "tool", "content": "x"}]}, "tool_call_id"),
])
def test_bad_tool_requests_are_refused(serve, tool_engines, extra, message):
    server = serve(tool_engines["hermes"])
    with pytest.raises(openai.BadRequestError, match=message):
        _create(server, **extra)


def test_tools_over_raw_http_as_curl_sends_them(serve, tool_engines):
    server = serve(tool_engines["llama3"])
    with http(server) as h:
        body = {"messages": ASK, "tools": [WEATHER, CLOCK], "tool_choice": "required", "temperature": 0, "max_tokens": 500}
        reply = h.post("/v1/chat/completions", json=body).json()
    message = reply["choices"][0]["message"]
    assert reply["choices"][0]["finish_reason"] == "tool_calls" and message["content"] is None
    assert len(message["tool_calls"]) == 1  # Llama 3 templates take one call per turn


@pytest.mark.parametrize("stream", [False, True])
def test_a_stop_string_that_ends_the_call_block(serve, tool_engines, stream):
    """stop works on the text as for any reply: here it removes the block's closing tag (and ends
    the reply there); the call before it is still read, and usage is reported."""
    server = serve(tool_engines["hermes"])
    kw = {"tool_choice": "required", "stop": ["</tool_call>"], "temperature": 1.0, "seed": 4}
    if not stream:
        reply = _create(server, **kw)
        assert reply.choices[0].finish_reason == "tool_calls" and len(reply.choices[0].message.tool_calls) == 1
        _check_calls(reply.choices[0].message.tool_calls)
        assert reply.usage.completion_tokens > 0
        return
    chunks = list(_create(server, stream=True, stream_options={"include_usage": True}, **kw))
    starts = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or []) if d.id]
    assert len(starts) == 1 and chunks[-1].usage.completion_tokens > 0
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_cut_by_the_token_limit_says_length(serve, tool_engines, stream):
    server = serve(tool_engines["hermes"])
    kw = {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "max_tokens": 12}
    if not stream:
        assert _create(server, **kw).choices[0].finish_reason == "length"
        return
    chunks = list(_create(server, stream=True, **kw))
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["length"]


@pytest.mark.parametrize("limit", [12, 16, 24])
def test_a_forced_call_cut_by_the_token_limit_keeps_its_partial_call(serve, tool_engines, family, limit):
    """As OpenAI does: a call whose name was written is returned (its arguments so far) with
    finish_reason "length" (it was dropped when the cut came before its arguments), and the same call
    streamed and not (the streamed arguments had a leading space the other lacked)."""
    server = serve(tool_engines[family])
    kw = {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "max_tokens": limit}
    whole = _create(server, **kw).choices[0]
    calls = whole.message.tool_calls or []
    assert whole.finish_reason == "length" and not whole.message.content
    assert all(c.function.name == "get_weather" for c in calls)
    if limit >= 16:  # the name is written by then in every family's format
        assert len(calls) == 1
    chunks = [c for c in _create(server, stream=True, **kw) if c.choices]
    streamed = "".join(d.function.arguments or "" for c in chunks for d in c.choices[0].delta.tool_calls or [])
    names = [d.function.name for c in chunks for d in c.choices[0].delta.tool_calls or [] if d.function.name]
    assert names == [c.function.name for c in calls] and streamed == "".join(c.function.arguments for c in calls)
