"""Anthropic Messages beyond the basics: thinking blocks of a reasoning model (whole and streamed),
`thinking` accepted, pings while a long prefill keeps the first token away, structured output, and a
streaming client that hangs up."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from engine import Engine, EngineConfig
from engine.server.anthropic import stream as anthropic_stream
from engine.server.generation import Piece, Usage
from engine.server.chat.replies import Shape
from tests.engine.helpers import with_template
from tests.server.helpers import http
from tests.server.test_anthropic import ASK, _create, _stream


@pytest.fixture(scope="module")
def thinking_engine(tiny_models, tmp_path_factory):
    """The tiny model with DeepSeek-R1's template, which opens <think> in the prompt: a random
    model never closes it, so its whole reply is reasoning."""
    folder = with_template(tiny_models["llama"], tmp_path_factory.mktemp("r1") / "tiny", "deepseek-r1-distill")
    engine = Engine.load(str(folder), EngineConfig(backend="torch", dtype="float32", max_context=256))
    yield engine
    engine.close()


def test_reasoning_comes_as_a_thinking_block_whole_and_streamed(serve, thinking_engine):
    server = serve(thinking_engine)
    thinking = {"type": "enabled", "budget_tokens": 1024}
    whole = _create(server, max_tokens=10, thinking=thinking)
    assert [b.type for b in whole.content] == ["thinking"] and whole.content[0].thinking.strip()
    events, final = _stream(server, max_tokens=10, thinking=thinking)
    deltas = [e.delta.thinking for e in events if e.type == "content_block_delta" and e.delta.type == "thinking_delta"]
    assert len(deltas) > 2 and "".join(deltas) == whole.content[0].thinking == final.content[0].thinking
    history = ASK + [{"role": "assistant", "content": whole.content}, {"role": "user", "content": "And?"}]
    assert _create(server, messages=history, max_tokens=4).usage.output_tokens > 0  # thinking blocks go back


class _SlowReply:
    """A reply whose first piece waits for `gate`: a prefill that takes long."""

    stop_sequence = None

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate
        self.closed = False

    async def pieces(self):
        await self.gate.wait()
        yield Piece("Hi", "stop", Usage(5, 1, 0))

    def close(self) -> None:
        self.closed = True


def test_pings_go_out_while_the_first_token_is_awaited(monkeypatch):
    monkeypatch.setattr(anthropic_stream, "PING_S", 0.01)

    async def run() -> list[str]:
        reply = _SlowReply(asyncio.Event())
        names = []
        async for chunk in anthropic_stream.events(reply, Shape("chat", "m", "k"), "msg_1", "m", 5):
            names.append(chunk.decode().split("\n", 1)[0].removeprefix("event: "))
            if names.count("ping") == 4:
                reply.gate.set()
        assert reply.closed
        return names

    names = asyncio.run(run())
    assert names == ["message_start"] + ["ping"] * 4 + [
        "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]


def test_output_format_json_schema_is_enforced(serve, tiny_engine):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"]}
    server = serve(tiny_engine)
    for kw in ({"extra_body": {"output_format": {"type": "json_schema", "schema": schema}}},
               {"output_config": {"format": {"type": "json_schema", "schema": schema}}}):
        reply = _create(server, max_tokens=60, **kw)
        assert reply.stop_reason == "end_turn"
        assert set(json.loads(reply.content[0].text)) == {"city"}


def test_a_streaming_client_that_hangs_up_frees_its_session(serve, tiny_engine):
    server = serve(tiny_engine)
    body = {"model": tiny_engine.source, "messages": ASK, "max_tokens": 200, "stream": True, "temperature": 0}
    h = http(server)
    with h.stream("POST", "/v1/messages", json=body, headers={"x-session-id": "gone"}) as r:
        for line in r.iter_lines():
            if "content_block_delta" in line:
                break  # one token arrived; now hang up
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        gone = next(s for s in h.get("/v1/sessions").json()["data"] if s["id"] == "gone")
        if not gone["busy"]:
            break
        time.sleep(0.05)
    assert not gone["busy"] and gone["tokens"] < 150  # stopped instead of running to its 200 tokens
    again = h.post("/v1/messages", json={**body, "stream": False, "max_tokens": 2}, headers={"x-session-id": "gone"})
    assert again.status_code == 200, again.text  # the session takes a new turn (no 409)


TOOL = {"name": "f", "input_schema": {"type": "object"}}


@pytest.mark.parametrize("extra, words", [
    ({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "f", "input": "text"}]}]}, "messages.1.content.0.input must be an object"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "server tool 'web_search_20250305'"),
    ({"tools": [{"name": "f"}]}, "tools.0.input_schema"),
    ({"tools": [TOOL], "tool_choice": {"type": "tool"}}, "needs the tool's name"),
    ({"tools": [TOOL], "tool_choice": {"type": "tool", "name": "g"}}, "'g', which is not among the tools"),
    ({"tool_choice": {"type": "any"}}, "tool_choice needs tools"),
    ({"stop_sequences": [""]}, "stop_sequences"),
    ({"mcp_servers": [{"type": "url", "url": "http://x"}]}, "mcp_servers is not supported"),
    ({"system": [{"type": "image"}]}, "system.0: image content is not supported"),
    ({"temperature": 1.5}, "temperature"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"messages": []}, "messages"),
])
def test_bad_requests_name_what_is_wrong(serve, tiny_engine, extra, words):
    server = serve(tiny_engine)
    body = {"model": tiny_engine.source, "messages": ASK, "max_tokens": 4, **extra}
    with http(server) as h:
        r = h.post("/v1/messages", json=body)
        assert r.status_code == 400 and r.json()["type"] == "error", r.text
        assert r.json()["error"]["type"] == "invalid_request_error" and words in r.json()["error"]["message"]
        count = h.post("/v1/messages/count_tokens", json={k: v for k, v in body.items() if k not in ("max_tokens",)})
        assert count.status_code in (200, 400)
        assert h.post("/v1/messages", json={"messages": ASK, "max_tokens": 2}).status_code == 200  # it goes on
