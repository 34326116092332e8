"""What a chat request asks of the reply's shape: tools shown to the model, a grammar it must follow
(response_format, or tool_choice "required" / a named function), whether calls are read back, and
log probabilities. Everything is checked here, before a session is leased.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .. import Constraint, Engine
from ..errors import InvalidRequestError
from .chat.schemas import ChatCompletionRequest
from .errors import bad_request


@dataclass(frozen=True)
class Plan:
    tools: Optional[list[dict]]
    """Tools the template shows the model (None: none)."""
    constraint: Optional[Constraint]
    tool_format: Optional[str]
    """The model's call format when calls are read from the reply; None for plain text."""
    parallel: bool
    logprobs: Optional[int]


def plan(body: ChatCompletionRequest, engine: Engine) -> Plan:
    tools = [t.model_dump(exclude_none=True) for t in body.tools] if body.tools else None
    choice = body.tool_choice if body.tool_choice is not None else ("auto" if tools else "none")
    if choice != "none" and not tools:
        raise bad_request("tool_choice needs tools", "invalid_tool_choice")
    parallel = body.parallel_tool_calls is not False
    constraint = _response_format(body)
    if choice == "none":
        tools = None
    elif choice == "required":
        constraint = engine.tool_constraint(tools, parallel)
    elif choice != "auto":
        named = [t for t in tools if t["function"]["name"] == choice.function.name]
        if not named:
            raise bad_request(f"tool_choice names {choice.function.name!r}, which is not among the tools",
                              "invalid_tool_choice")
        constraint = engine.tool_constraint(named, parallel=False)
    if body.top_logprobs is not None and not body.logprobs:
        raise bad_request("top_logprobs needs logprobs: true")
    logprobs = (body.top_logprobs or 0) if body.logprobs else None
    return Plan(tools, constraint, engine.tool_format if tools else None, parallel, logprobs)


def _response_format(body: ChatCompletionRequest) -> Optional[Constraint]:
    fmt = body.response_format
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object" and fmt.schema_ is None:
        return Constraint.json_object()
    schema = fmt.schema_ if fmt.type == "json_object" else fmt.json_schema.schema_
    try:
        # Objects closed even when not strict: the reply still validates against the schema as given,
        # and a weak model left free to add properties can fill the token limit with them.
        return Constraint.json_schema(schema, strict=True)
    except InvalidRequestError as e:
        raise bad_request(str(e), "invalid_json_schema") from None
