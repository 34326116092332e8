"""Anthropic Messages (`/v1/messages`, `/v1/messages/count_tokens`) through the official `anthropic`
SDK against a real server: create, stream (the real event sequence), tools round trip on every
template family, count_tokens, stop sequences, thinking blocks, keys, and Anthropic-shaped errors
that leave other sessions untouched."""

from __future__ import annotations

import json

import anthropic
import jsonschema
import pytest

from tests.server.helpers import KEY, http
from tests.server.tool_fixtures import SCHEMAS, family, tool_engines  # noqa: F401

ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [{"name": name, "description": f"the {name} tool", "input_schema": schema} for name, schema in SCHEMAS.items()]


def sdk(server, api_key: str = "none") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key=api_key, max_retries=0, timeout=120)


def _create(server, **kw) -> anthropic.types.Message:
    """messages.create; temperature (0 unless given), top_p and top_k go in extra_body: the API takes
    them (Claude Code and older SDKs send them), this SDK release no longer has them as arguments."""
    return sdk(server).messages.create(**_body(server, kw))


def _body(server, kw: dict) -> dict:
    sampling = {k: kw.pop(k) for k in ("temperature", "top_p", "top_k") if k in kw}
    body = {"model": server.host.engine.source, "messages": ASK, "max_tokens": 12, **kw}
    body["extra_body"] = {"temperature": 0, **sampling, **kw.get("extra_body", {})}
    return body


def _stream(server, **kw) -> tuple[list, anthropic.types.Message]:
    with sdk(server).messages.stream(**_body(server, kw)) as stream:
        events = list(stream)
        return events, stream.get_final_message()


def test_create_answers_a_message_with_usage(serve, tiny_engine):
    reply = _create(serve(tiny_engine), system="You are terse.", max_tokens=6)
    assert reply.type == "message" and reply.role == "assistant" and reply.id.startswith("msg_")
    assert [b.type for b in reply.content] == ["text"] and reply.content[0].text
    assert reply.stop_reason in ("end_turn", "max_tokens") and reply.stop_sequence is None
    assert reply.usage.input_tokens + reply.usage.cache_read_input_tokens > 0
    assert 0 < reply.usage.output_tokens <= 6


def test_system_as_blocks_is_the_same_prompt_as_a_string(serve, tiny_engine):
    server = serve(tiny_engine)
    count = sdk(server).messages.count_tokens
    as_text = count(model=tiny_engine.source, messages=ASK, system="Be brief.\n\nBe kind.")
    as_blocks = count(model=tiny_engine.source, messages=ASK, system=[
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "Be kind."}])
    assert as_text.input_tokens == as_blocks.input_tokens > 0


def test_stream_is_the_real_event_sequence_and_the_same_text(serve, tiny_engine):
    server = serve(tiny_engine)
    whole = _create(server, max_tokens=10)
    events, final = _stream(server, max_tokens=10)
    kinds = [e.type for e in events if e.type in (
        "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop")]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds[1] == "content_block_start" and kinds[-3] == "content_block_stop"
    assert kinds.count("content_block_delta") > 1  # streamed in pieces
    assert final.content[0].text == whole.content[0].text
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens


def test_max_tokens_and_stop_sequences_say_why_the_reply_ended(serve, tiny_engine):
    server = serve(tiny_engine)
    cut = _create(server, max_tokens=3)
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 3
    text = _create(server, max_tokens=20).content[0].text
    stop = next(text[k:k + 2] for k in range(3, len(text) - 2) if text[k:k + 2].strip() and text.find(text[k:k + 2]) == k)
    stopped = _create(server, max_tokens=20, stop_sequences=["never-there", stop])
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == stop
    assert stopped.content[0].text == text[:text.find(stop)]


def test_sampling_fields_and_metadata_are_accepted(serve, tiny_engine):
    reply = _create(serve(tiny_engine), temperature=0.7, top_p=0.9, top_k=5, metadata={"user_id": "u1"},
                    extra_headers={"anthropic-beta": "anything"})
    assert reply.type == "message" and reply.usage.output_tokens > 0  # (sampled: its text may be blank)


def test_tools_round_trip_tool_use_then_tool_result(serve, tool_engines, family):
    server = serve(tool_engines[family])
    first = _create(server, tools=TOOLS, tool_choice={"type": "any"}, max_tokens=300)
    uses = [b for b in first.content if b.type == "tool_use"]
    assert first.stop_reason == "tool_use" and uses
    for use in uses:
        assert use.id.startswith("toolu_") and use.name in SCHEMAS
        jsonschema.validate(use.input, SCHEMAS[use.name])
    history = ASK + [{"role": "assistant", "content": first.content},  # the SDK's blocks go back as they are
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "sunny, 21 °C"}
                                                  for u in uses]}]
    second = _create(server, tools=TOOLS, messages=history, max_tokens=8)
    assert second.stop_reason in ("end_turn", "max_tokens", "tool_use") and second.content
    if family == "hermes":  # Mistral's template moves the tools to the last user turn: no common prefix
        assert second.usage.cache_read_input_tokens > 0  # the follow-up reused the warm session


def test_tool_choice_tool_names_the_call_and_none_gives_none(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    named = _create(server, tools=TOOLS, tool_choice={"type": "tool", "name": "get_time"}, max_tokens=300)
    assert [b.name for b in named.content if b.type == "tool_use"] == ["get_time"]
    none = _create(server, tools=TOOLS, tool_choice={"type": "none"}, max_tokens=8)
    assert all(b.type == "text" for b in none.content) and none.stop_reason != "tool_use"
    auto = _create(server, tools=TOOLS, tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    assert auto.stop_reason in ("end_turn", "max_tokens", "tool_use")


def test_streamed_tool_use_is_input_json_deltas_of_the_same_call(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    kw = {"tools": TOOLS, "tool_choice": {"type": "tool", "name": "get_weather"}, "max_tokens": 300}
    whole = _create(server, **kw)
    events, final = _stream(server, **kw)
    starts = [e for e in events if e.type == "content_block_start" and e.content_block.type == "tool_use"]
    pieces = [e.delta.partial_json for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
    assert len(starts) == 1 and starts[0].content_block.name == "get_weather" and len(pieces) > 1
    assert json.loads("".join(pieces)) == whole.content[-1].input == final.content[-1].input
    assert final.stop_reason == "tool_use"


def test_a_forced_call_cut_by_max_tokens_has_no_marker_text(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    for limit in (1, 3, 12):
        reply = _create(server, tools=TOOLS, tool_choice={"type": "any"}, max_tokens=limit)
        assert reply.stop_reason == "max_tokens"
        assert "<tool_call>" not in "".join(b.text for b in reply.content if b.type == "text")


def test_count_tokens_is_the_prompt_create_prefills(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    counted = sdk(server).messages.count_tokens(model=server.host.engine.source, messages=ASK, tools=TOOLS,
                                                system="Use the tools.")
    reply = _create(server, tools=TOOLS, system="Use the tools.", max_tokens=2)
    assert counted.input_tokens == reply.usage.input_tokens + reply.usage.cache_read_input_tokens
    plain = sdk(server).messages.count_tokens(model=server.host.engine.source, messages=ASK)
    assert plain.input_tokens < counted.input_tokens  # the tools are part of the prompt


def test_a_final_assistant_message_is_continued(serve, tiny_engine):
    server = serve(tiny_engine)
    reply = _create(server, messages=ASK + [{"role": "assistant", "content": "The weather"}], max_tokens=4)
    assert reply.content and reply.usage.output_tokens > 0


@pytest.mark.parametrize("messages, words", [
    ([{"role": "user", "content": [{"type": "video", "url": "x"}]}], "unknown or misplaced content block type 'video'"),
    ([{"role": "user", "content": [{"type": "image", "source": {}}]}], "only base64 images are taken"),
    ([{"role": "user", "content": [{"type": "document", "source": {}}]}], "document content is not supported"),
    (ASK + [{"role": "assistant", "content": "Let me check."},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}],
     "tool_result for tool_use_id 'toolu_1'"),
    ([{"role": "system", "content": "x"}], "messages.0.role"),
])
def test_bad_input_is_an_anthropic_400_and_other_sessions_go_on(serve, tiny_engine, messages, words):
    server = serve(tiny_engine)
    keep = {"extra_headers": {"x-session-id": "keep"}}
    _create(server, max_tokens=4, **keep)
    held = [s for s in http(server).get("/v1/sessions").json()["data"] if s["id"] == "keep"][0]["tokens"]
    with pytest.raises(anthropic.BadRequestError) as caught:
        _create(server, messages=messages)
    assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"] == "invalid_request_error"
    assert words in caught.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError):  # on the named session too: nothing of it changes
        _create(server, messages=messages, **keep)
    assert [s for s in http(server).get("/v1/sessions").json()["data"] if s["id"] == "keep"][0]["tokens"] == held
    again = _create(server, max_tokens=4, **keep)
    assert again.usage.cache_read_input_tokens > 0


def test_errors_have_anthropic_shape_for_every_status(serve, tiny_engine):
    server = serve(tiny_engine, api_key=KEY)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        _create(server)  # the key "none" is wrong
    assert caught.value.body["error"]["type"] == "authentication_error"
    good = sdk(server, KEY)
    assert good.messages.create(model=tiny_engine.source, messages=ASK, max_tokens=2).usage.output_tokens > 0
    with pytest.raises(anthropic.NotFoundError) as caught:
        good.messages.create(model="some-other-model", messages=ASK, max_tokens=2)
    assert caught.value.body["error"]["type"] == "not_found_error" and "not loaded" in caught.value.body["error"]["message"]
    raw = http(server).post("/v1/messages", json={"messages": ASK}, headers={
        "Authorization": f"Bearer {KEY}", "anthropic-version": "2023-06-01"})
    assert raw.status_code == 400 and raw.json()["type"] == "error" and "max_tokens" in raw.json()["error"]["message"]


def test_raw_http_stream_has_named_events_and_a_ping(serve, tiny_engine):
    body = {"model": tiny_engine.source, "messages": ASK, "max_tokens": 4, "stream": True}
    with http(serve(tiny_engine)).stream("POST", "/v1/messages", json=body,
                                         headers={"x-api-key": "x", "anthropic-version": "2023-06-01"}) as r:
        lines = [line for line in r.iter_lines() if line.startswith("event: ")]
    names = [line.removeprefix("event: ") for line in lines]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
