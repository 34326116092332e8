"""langchain-openai against the server, as LangChain agents use it: `bind_tools` (forced and
automatic) and `with_structured_output` by JSON schema and by function calling."""

from __future__ import annotations

from typing import Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from tests.server.tool_fixtures import family, tool_engines  # noqa: F401

langchain_openai = pytest.importorskip("langchain_openai")


class Weather(BaseModel):
    """Current weather in a city."""

    city: str = Field(description="City name", max_length=16)
    celsius: bool = Field(description="Report in degrees Celsius")


class Forecast(BaseModel):
    """A short forecast."""

    summary: str = Field(max_length=20)
    high: int = Field(ge=-50, le=60)


def get_time(zone: Literal["UTC", "CET", "PST"]) -> str:
    """Current time in a time zone."""
    return "12:00"


def _chat(server, **kw):
    return langchain_openai.ChatOpenAI(base_url=server.url, api_key="none", model=server.host.engine.source,
                                       temperature=0, max_tokens=300, max_retries=0, **kw)


def test_bind_tools_with_a_required_choice(serve, tool_engines, family):
    llm = _chat(serve(tool_engines[family])).bind_tools([Weather, get_time], tool_choice="required")
    message = llm.invoke("What is the weather in Oslo?")
    assert message.tool_calls and message.response_metadata["finish_reason"] == "tool_calls"
    for call in message.tool_calls:
        assert call["name"] in ("Weather", "get_time") and call["id"]
        if call["name"] == "Weather":
            Weather(**call["args"])
        else:
            assert call["args"]["zone"] in ("UTC", "CET", "PST")


def test_bind_tools_named_and_streamed(serve, tool_engines):
    llm = _chat(serve(tool_engines["hermes"])).bind_tools([Weather, get_time], tool_choice="Weather")
    whole = None
    for chunk in llm.stream("Weather in Rome?"):
        whole = chunk if whole is None else whole + chunk
    assert [c["name"] for c in whole.tool_calls] == ["Weather"]
    Weather(**whole.tool_calls[0]["args"])


def test_tool_message_round_trip(serve, tool_engines, family):
    from langchain_core.messages import HumanMessage, ToolMessage

    llm = _chat(serve(tool_engines[family]), max_completion_tokens=None)
    forced = llm.bind_tools([Weather], tool_choice="Weather")
    question = HumanMessage("What is the weather in Oslo?")
    call = forced.invoke([question])
    answer = llm.bind_tools([Weather]).invoke(
        [question, call, ToolMessage("cloudy, 4 degrees", tool_call_id=call.tool_calls[0]["id"])], max_tokens=8)
    assert answer.response_metadata["finish_reason"] in ("stop", "length", "tool_calls")


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_with_structured_output(serve, tool_engines, method):
    llm = _chat(serve(tool_engines["hermes"])).with_structured_output(Forecast, method=method)
    forecast = llm.invoke("Give me tomorrow's forecast.")
    assert isinstance(forecast, Forecast)
    jsonschema.validate(forecast.model_dump(), Forecast.model_json_schema())


def test_with_structured_output_json_mode(serve, tool_engines):
    """Any JSON object: a random model may write a long one, or be cut by the limit (the SDK's
    parser then raises the SDK's own error for a reply cut by the token limit, as with OpenAI)."""
    import openai

    llm = _chat(serve(tool_engines["hermes"])).with_structured_output(method="json_mode", include_raw=True)
    try:
        result = llm.invoke("Return a JSON object.")
    except openai.LengthFinishReasonError as e:
        assert e.completion.choices[0].message.content.startswith("{")
    else:
        assert isinstance(result["parsed"], dict)
