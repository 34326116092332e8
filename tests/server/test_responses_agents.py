"""The openai-agents SDK's default model (OpenAIResponsesModel over the Responses API) against a real
server on 127.0.0.1: a plain run, a streamed run, and a function tool the agent calls and reads back.

The SDK treats a reply cut by max_tokens (`response.incomplete`) as a failure, and a random-weight
model never stops on its own, so the agents here answer in a typed output (`text.format`
json_schema, enforced by the server), which ends when its JSON closes.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import agents  # openai-agents, from the test extra
import pytest
from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool
from openai import AsyncOpenAI
from pydantic import BaseModel

from tests.server.tool_fixtures import tool_engines  # noqa: F401


class Verdict(BaseModel):
    answer: Literal["yes", "no"]


def _model(server) -> OpenAIResponsesModel:
    client = AsyncOpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
    return OpenAIResponsesModel(model=server.host.engine.source, openai_client=client)


@pytest.fixture(autouse=True)
def _no_tracing():
    agents.set_tracing_disabled(True)  # tracing would post to OpenAI's servers
    yield


def test_a_plain_run(serve, tiny_engine):
    server = serve(tiny_engine)
    agent = Agent(name="helper", instructions="Answer yes or no.", model=_model(server), output_type=Verdict,
                  model_settings=ModelSettings(temperature=0, max_tokens=40))
    result = asyncio.run(Runner.run(agent, "Is the sky blue?"))
    assert isinstance(result.final_output, Verdict)
    assert result.raw_responses[0].usage.output_tokens > 0


def test_a_streamed_run(serve, tiny_engine):
    server = serve(tiny_engine)
    agent = Agent(name="helper", model=_model(server), output_type=Verdict,
                  model_settings=ModelSettings(temperature=0, max_tokens=40))

    async def run() -> tuple[str, Verdict]:
        streamed = Runner.run_streamed(agent, "Is it raining?")
        deltas = [e.data.delta async for e in streamed.stream_events()
                  if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"]
        return "".join(deltas), streamed.final_output

    text, final = asyncio.run(run())
    assert Verdict.model_validate_json(text) == final


def test_a_tool_call_runs_and_its_result_goes_back(serve, tool_engines):
    server = serve(tool_engines["hermes"])
    seen: list[str] = []

    @function_tool
    def get_weather(city: Literal["Paris", "Oslo", "Rome"]) -> str:
        """Current weather in a city."""
        seen.append(city)
        return "22 C, sunny"

    agent = Agent(name="weather", model=_model(server), tools=[get_weather], output_type=Verdict,
                  model_settings=ModelSettings(temperature=0, max_tokens=200, tool_choice="required"))
    result = asyncio.run(Runner.run(agent, "What is the weather in Paris?", max_turns=3))
    assert len(seen) >= 1  # the SDK ran the call the model made
    kinds = [item.type for item in result.new_items]
    assert kinds.count("tool_call_item") == kinds.count("tool_call_output_item") == len(seen)
    assert isinstance(result.final_output, Verdict)
    # The second request sent the call and its output back; the server read them as a tool turn.
    assert result.raw_responses[1].usage.input_tokens > result.raw_responses[0].usage.input_tokens
