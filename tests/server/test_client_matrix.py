"""What real clients send to /v1/chat/completions, each request as the client shapes it, and the
defects they found (each test here failed before its fix). The rest of the matrix: the openai SDK
throughout tests/server, LangChain in test_langchain.py, the Anthropic SDK in test_anthropic.py.

instructor itself is not installed (it would change the pinned openai version): its requests are
reproduced by hand from its modes (JSON_SCHEMA, JSON, TOOLS)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.server.helpers import client, http
from tests.server.test_structured import ORDER
from tests.server.tool_fixtures import SCHEMAS, TOOLS, tool_engines  # noqa: F401

ASK = [{"role": "user", "content": "Order something."}]


def _chat(server, **kw):
    body = {"model": server.host.engine.source, "messages": ASK, "temperature": 0, "max_tokens": 200}
    return client(server).chat.completions.create(**{**body, **kw})


@pytest.mark.parametrize("seed", [0, 1])
def test_instructor_json_schema_mode_enforces_the_schema(serve, tiny_engine, seed):
    """instructor's JSON_SCHEMA mode sends llama.cpp server's form: the schema beside json_object."""
    reply = _chat(serve(tiny_engine), response_format={"type": "json_object", "schema": ORDER}, temperature=1.0,
                  seed=seed)
    assert reply.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(reply.choices[0].message.content), ORDER)


def test_instructor_json_mode_is_any_object(serve, tiny_engine):
    system = f"As a genius expert, your task is to understand the content and provide the parsed objects in json " \
             f"that match the following json_schema:\n\n{json.dumps(ORDER, indent=2)}\n\nMake sure to return an " \
             f"instance of the JSON, not the schema itself"
    choice = _chat(serve(tiny_engine), messages=[{"role": "system", "content": system}, *ASK],
                   response_format={"type": "json_object"}).choices[0]
    assert choice.finish_reason == "length" or isinstance(json.loads(choice.message.content), dict)


def test_instructor_tools_mode_gives_the_named_call(serve, tool_engines):
    name = "get_weather"
    reply = _chat(serve(tool_engines["hermes"]), tools=[TOOLS[0]],
                  tool_choice={"type": "function", "function": {"name": name}}, max_tokens=300)
    call = reply.choices[0].message.tool_calls[0]
    assert call.function.name == name
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[name])


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("limit", [1, 2, 4, 8, 12])
def test_a_forced_call_cut_by_max_tokens_never_gives_the_marker_as_content(serve, tool_engines, stream, limit):
    server = serve(tool_engines["hermes"])
    kw = {"messages": [{"role": "user", "content": "Weather?"}], "tools": TOOLS, "tool_choice": "required",
          "max_tokens": limit}
    if stream:
        chunks = list(_chat(server, stream=True, **kw))
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    else:
        choice = _chat(server, **kw).choices[0]
        content, reasons = choice.message.content or "", [choice.finish_reason]
    assert reasons == ["length"] and "<tool_call>" not in content and "<tool_call" not in content


AIDER_SYSTEM = """Act as an expert software developer.
Take requests for changes to the supplied code.
If the request is ambiguous, ask questions.

Once you understand the request you MUST:
1. Determine if any code changes are needed.
2. Explain any needed changes.
3. If changes are needed, output a copy of each file that needs changes.

To suggest changes to a file you MUST return the entire content of the updated file.
You MUST use this *file listing* format:

path/to/filename.js
```
// entire file content ...
// ... goes in between
```
"""


def test_aider_whole_file_edit_request_streams_the_whole_reply(serve, tiny_engine):
    """aider's "whole" edit format: a long system prompt, the file in a user turn, "Ok." from the
    assistant, then the request; streamed at temperature 0, as litellm sends it."""
    messages = [{"role": "system", "content": AIDER_SYSTEM},
                {"role": "user", "content": "I have *added these files to the chat* so you can go ahead and edit "
                                            "them.\n\nhello.py\n```\nprint('hello')\n```"},
                {"role": "assistant", "content": "Ok."},
                {"role": "user", "content": "Make it print goodbye."}]
    body = {"model": tiny_engine.source, "messages": messages, "temperature": 0, "stream": True, "max_tokens": 24}
    server = serve(tiny_engine)
    chunks = list(client(server).chat.completions.create(**body))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    whole = http(server).post("/v1/chat/completions", json={**body, "stream": False}).json()
    assert streamed == whole["choices"][0]["message"]["content"] and streamed
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert reasons == [whole["choices"][0]["finish_reason"]]
