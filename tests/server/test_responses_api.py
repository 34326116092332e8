"""OpenAI's Responses API through the official openai client against a real server on 127.0.0.1:
plain, streamed, tools round trip, structured output, stored responses and previous_response_id."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest

from tests.server.helpers import KEY, client, http
from tests.server.tool_fixtures import SCHEMAS, TOOLS, tool_engines  # noqa: F401

RESPONSE_TOOLS = [{"type": "function", **t["function"]} for t in TOOLS]


def _create(server, **kw):
    return client(server).responses.create(**{"model": server.host.engine.source, "temperature": 0,
                                              "max_output_tokens": 8, **kw})


def test_plain_input_gives_one_message(serve, tiny_engine):
    server = serve(tiny_engine)
    response = _create(server, input="Hello", instructions="Be brief.")
    assert response.object == "response" and response.status in ("completed", "incomplete")
    assert [item.type for item in response.output] == ["message"]
    assert response.output_text == response.output[0].content[0].text
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.store is False


def test_the_same_as_chat_completions(serve, tiny_engine):
    """One internal request: the Responses answer is the chat/completions answer."""
    server = serve(tiny_engine)
    response = _create(server, input="Hello", instructions="Be brief.")
    chat = client(server).chat.completions.create(
        model=tiny_engine.source, temperature=0, max_tokens=8,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}])
    assert response.output_text == chat.choices[0].message.content
    assert response.usage.input_tokens == chat.usage.prompt_tokens


def test_max_output_tokens_makes_it_incomplete(serve, tiny_engine):
    server = serve(tiny_engine)
    response = _create(server, input="Tell me a long story", max_output_tokens=3)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.output_tokens == 3


def test_stream_sends_the_events_in_order_and_matches_the_whole_reply(serve, tiny_engine):
    server = serve(tiny_engine)
    whole = _create(server, input="Hello")
    events = list(_create(server, input="Hello", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[2:4] == ["response.output_item.added", "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          f"response.{whole.status}"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == whole.output_text
    assert events[-1].response.output_text == whole.output_text
    assert events[-1].response.usage.output_tokens == whole.usage.output_tokens


def test_the_sdk_stream_helper_reads_the_final_response(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    with client(server).responses.stream(model=server.host.engine.source, input="Weather in Rome?",
                                         tools=RESPONSE_TOOLS, tool_choice="required", temperature=0,
                                         max_output_tokens=200) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert kinds[-1] == "response.completed" and "response.function_call_arguments.delta" in kinds
    calls = [item for item in final.output if item.type == "function_call"]
    assert calls and all(json.loads(c.arguments) for c in calls)


def test_a_cut_stream_ends_with_response_incomplete(serve, tiny_engine):
    server = serve(tiny_engine)
    events = list(_create(server, input="Tell me a story", max_output_tokens=3, stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"


def test_tools_round_trip(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = _create(server, input=ask, tools=RESPONSE_TOOLS, tool_choice="required", max_output_tokens=200)
    calls = [item for item in first.output if item.type == "function_call"]
    assert calls and first.status == "completed"
    for call in calls:
        assert call.call_id and call.id.startswith("fc_")
        jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
    # The client runs the tools and sends everything back, stateless (as Codex does).
    follow = ask + [c.model_dump() for c in calls] + [
        {"type": "function_call_output", "call_id": c.call_id, "output": "22 C, sunny"} for c in calls]
    second = _create(server, input=follow, tools=RESPONSE_TOOLS, tool_choice="none", max_output_tokens=8)
    assert [item.type for item in second.output] == ["message"]
    # The model read the calls and their results as chat/completions would send them.
    chat = client(server).chat.completions.create(
        model=server.host.engine.source, temperature=0, max_tokens=8, tools=TOOLS, tool_choice="none",
        messages=ask + [{"role": "assistant", "content": None, "tool_calls": [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls]}] + [{"role": "tool", "tool_call_id": c.call_id, "content": "22 C, sunny"} for c in calls])
    assert second.usage.input_tokens == chat.usage.prompt_tokens
    assert second.output_text == chat.choices[0].message.content


def test_named_tool_choice_calls_that_function(serve, tool_engines):
    server = serve(tool_engines["llama3"])
    response = _create(server, input="What time is it in Paris?", tools=RESPONSE_TOOLS,
                       tool_choice={"type": "function", "name": "get_time"}, max_output_tokens=200)
    calls = [item for item in response.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_time"]
    jsonschema.validate(json.loads(calls[0].arguments), SCHEMAS["get_time"])


def test_streamed_calls_match_the_whole_reply(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    kw = dict(input="Weather in Oslo?", tools=RESPONSE_TOOLS, tool_choice="required", max_output_tokens=200)
    whole = [(c.name, c.arguments) for c in _create(server, **kw).output if c.type == "function_call"]
    events = list(_create(server, stream=True, **kw))
    added = [e.item for e in events if e.type == "response.output_item.added" and e.item.type == "function_call"]
    done = {e.item_id: e.arguments for e in events if e.type == "response.function_call_arguments.done"}
    pieces: dict[str, str] = {}
    for e in events:
        if e.type == "response.function_call_arguments.delta":
            pieces[e.item_id] = pieces.get(e.item_id, "") + e.delta
    assert [(a.name, pieces[a.id]) for a in added] == whole
    assert [done[a.id] for a in added] == [args for _, args in whole]


def test_json_schema_text_format(serve, tiny_engine):
    server = serve(tiny_engine)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    response = _create(server, input="A number", max_output_tokens=40,
                       text={"format": {"type": "json_schema", "name": "num", "schema": schema, "strict": True}})
    jsonschema.validate(json.loads(response.output_text), schema)
    assert response.text.format.type == "json_schema"


def test_previous_response_id_prefills_only_the_new_items(serve, tiny_engine):
    server = serve(tiny_engine)
    first = _create(server, input="My name is Ada.", store=True)
    second = _create(server, input="What is my name?", previous_response_id=first.id, store=True)
    cached = second.usage.input_tokens_details.cached_tokens
    assert cached >= first.usage.input_tokens  # the whole first turn was reused
    assert second.usage.input_tokens > cached
    # The same history resent statelessly (a fresh server session) reads it all again. (Its count may
    # differ by a token or two: the stored session keeps the reply's exact token ids.)
    history = [{"role": "user", "content": "My name is Ada."},
               {"role": "assistant", "content": first.output_text},
               {"role": "user", "content": "What is my name?"}]
    resend = _create(server, input=history)
    assert resend.usage.input_tokens_details.cached_tokens == 0
    assert abs(resend.usage.input_tokens - second.usage.input_tokens) <= 4
    # A chain goes on: the third turn reuses the first two.
    third = _create(server, input="And again?", previous_response_id=second.id, store=True)
    assert third.usage.input_tokens_details.cached_tokens >= second.usage.input_tokens
    assert third.previous_response_id == second.id


def test_stored_responses_are_read_and_deleted_per_key(serve, tiny_engine):
    server = serve(tiny_engine, api_keys=(KEY, "other-key"))
    mine = client(server, KEY)
    response = mine.responses.create(model=tiny_engine.source, input="Hi", max_output_tokens=4, store=True)
    assert mine.responses.retrieve(response.id).output_text == response.output_text
    other = client(server, "other-key")
    with pytest.raises(openai.NotFoundError) as e:
        other.responses.retrieve(response.id)
    assert e.value.body["code"] == "response_not_found"
    with pytest.raises(openai.NotFoundError):
        other.responses.create(model=tiny_engine.source, input="Hi", previous_response_id=response.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.delete(response.id)
    mine.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError):
        mine.responses.retrieve(response.id)


def test_unstored_responses_cannot_be_continued(serve, tiny_engine):
    server = serve(tiny_engine)
    response = _create(server, input="Hi")
    with pytest.raises(openai.NotFoundError):
        _create(server, input="Again", previous_response_id=response.id)


@pytest.mark.parametrize("body, message", [
    ({"input": [{"type": "function_call_output", "call_id": "c1", "output": "x"}]}, "answers no function_call"),
    ({"input": [{"type": "computer_call", "id": "x"}]}, "item type 'computer_call' is not supported"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "an image URL must be a data URL"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-1"}]}]},
     "file ids are not supported here"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]}]},
     "content part 'input_file' is not supported"),
    ({"input": "Hi", "tools": [{"type": "web_search"}]}, "only function tools"),
    ({"input": "Hi", "tool_choice": "required"}, "tool_choice needs tools"),
    ({"input": "Hi", "background": True}, "background responses are not supported"),
    ({"input": "Hi", "frequency_penalty": 1}, "frequency_penalty"),
    ({"input": []}, "input is empty"),
])
def test_bad_input_gets_openai_errors(serve, tiny_engine, body, message):
    server = serve(tiny_engine)
    with http(server) as h:
        reply = h.post("/v1/responses", json={"max_output_tokens": 4, **body})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert message in error["message"] and error["type"] == "invalid_request_error"
    with http(server) as h:  # the server goes on
        assert h.post("/v1/responses", json={"input": "Hi", "max_output_tokens": 2}).status_code == 200
