"""Anthropic Messages request bodies, and their translation into the one internal chat request.

The translation is the whole of the Messages API's input side: a `MessagesRequest` becomes a
`ChatCompletionRequest` (messages with `tool_calls` / tool results, OpenAI-shaped tools and
tool_choice, sampling), so tools, constraints, reasoning and admission run the chat path's code.
What only Messages has (stop_sequences beyond chat's four, top_k, the Think switch, a final
assistant message to continue) comes back beside it in `Translated`.

Content blocks are read by hand rather than by a pydantic union: an unknown block type or a
tool_result without its tool_use is a 400 whose message names the block (`messages.2.content.0`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..chat.schemas import ChatCompletionRequest
from ..errors import bad_request

MAX_STOP_SEQUENCES = 16


class _Body(BaseModel):
    # Unknown top-level fields are ignored (clients add new beta fields often); those that would
    # change the result without being implemented are refused by name in `_refused`.
    model_config = ConfigDict(extra="ignore", strict=True)


class Message(_Body):
    role: Literal["user", "assistant"]
    content: Union[str, list[dict[str, Any]]]


class ToolChoice(_Body):
    type: Literal["auto", "any", "tool", "none"]
    name: Optional[str] = None
    disable_parallel_tool_use: Optional[bool] = None


class Thinking(_Body):
    type: Literal["enabled", "disabled", "adaptive", "between_tools"]
    """"enabled" / "disabled" turn the model's Think switch on / off; the others keep its default."""
    budget_tokens: Optional[int] = Field(default=None, ge=0)
    """Accepted and not enforced: the reasoning counts against max_tokens (docs/serve.md)."""
    display: Optional[str] = None


class CountTokensRequest(_Body):
    """POST /v1/messages/count_tokens: what the prompt of a `MessagesRequest` would hold."""

    model: Optional[str] = None
    messages: list[Message] = Field(min_length=1)
    system: Union[str, list[dict[str, Any]], None] = None
    tools: Optional[list[dict[str, Any]]] = None
    tool_choice: Optional[ToolChoice] = None
    thinking: Optional[Thinking] = None
    # Refused in `_refused` when set: they would change the result and are not implemented.
    mcp_servers: Optional[list[Any]] = None
    container: Optional[Any] = None


class MessagesRequest(CountTokensRequest):
    """POST /v1/messages."""

    max_tokens: int = Field(ge=1)
    stream: bool = False
    temperature: Optional[float] = Field(default=None, ge=0, le=1)
    top_p: Optional[float] = Field(default=None, ge=0, le=1)
    top_k: Optional[int] = Field(default=None, ge=0)
    stop_sequences: Optional[list[str]] = Field(default=None, max_length=MAX_STOP_SEQUENCES)
    metadata: Optional[dict[str, Any]] = None
    """`user_id` and the like: accepted, they change nothing."""
    output_format: Optional[dict[str, Any]] = None
    """Structured outputs: `{"type": "json_schema", "schema": {…}}`, enforced by the chat path's grammar."""
    output_config: Optional[dict[str, Any]] = None
    """The newer place of the same: `{"format": {…}}` (its `effort` is accepted and changes nothing)."""
    service_tier: Optional[str] = None
    ignore_eos: bool = False
    """vLLM's extension, as on chat: generate max_tokens even past end tokens (benchmarks)."""
    speculative: bool = True
    """Confab's extension, as on chat: false never drafts tokens for this reply (the same text either way)."""
    context_policy: Optional[Literal["refuse", "middle", "rolling"]] = None
    """Confab's extension, as on chat: a prompt longer than the context is refused (the default) or
    cut (engine.reply.truncation), said in the reply's `truncated` field and X-Confab-Truncated header."""


@dataclass(frozen=True)
class Translated:
    chat: ChatCompletionRequest
    """The internal request: what /v1/chat/completions would have been sent."""
    stops: list[str]
    top_k: int
    thinking: Optional[bool]
    """The Think switch: None keeps the template's default."""
    continue_final: bool
    """The last message is the assistant's own start (a prefill): the reply continues it."""


def translate(body: CountTokensRequest) -> Translated:
    """The chat request of a Messages (or count_tokens) body; APIError 400 naming what is wrong."""
    _refused(body)
    messages = ([{"role": "system", "content": _text(body.system, "system")}] if body.system else [])
    messages += _messages(body.messages)
    chat: dict[str, Any] = {"model": body.model, "messages": messages}
    if body.tools:
        chat["tools"] = [_tool(t, i) for i, t in enumerate(body.tools)]
    if body.tool_choice is not None:
        chat.update(_tool_choice(body.tool_choice, bool(body.tools)))
    full = isinstance(body, MessagesRequest)
    if full:
        chat.update({"max_tokens": body.max_tokens, "stream": body.stream, "temperature": body.temperature,
                     "top_p": body.top_p, "ignore_eos": body.ignore_eos,
                     "speculative": body.speculative})
        fmt = body.output_format or (body.output_config or {}).get("format")
        if fmt is not None:
            chat["response_format"] = _output_format(fmt)
    try:
        request = ChatCompletionRequest.model_validate({k: v for k, v in chat.items() if v is not None})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise bad_request(f"invalid request: {where}: {first.get('msg', 'invalid')}") from None
    continue_final = body.messages[-1].role == "assistant"
    if continue_final and messages[-1].get("tool_calls"):
        raise bad_request("the last message is an assistant turn with tool_use: send its tool_result "
                          "in a user message")
    thinking = {"enabled": True, "disabled": False}.get(body.thinking.type) if body.thinking else None
    return Translated(request, list(body.stop_sequences or []) if full else [],
                      (body.top_k or 0) if full else 0, thinking, continue_final)


def _refused(body: CountTokensRequest) -> None:
    if body.mcp_servers:
        raise bad_request("mcp_servers is not supported by this server: send the tools as tools")
    if body.container:
        raise bad_request("container (code execution) is not supported by this server")
    stops = getattr(body, "stop_sequences", None) or []
    if any(not s for s in stops):
        raise bad_request("stop_sequences must be non-empty strings")


def _messages(messages: list[Message]) -> list[dict]:
    """Anthropic turns as chat messages: an assistant's tool_use blocks become its `tool_calls`, a
    user's tool_result blocks become `tool` messages (before the user's own text)."""
    out: list[dict] = []
    called: set[str] = set()  # tool_use ids of the previous assistant turn
    for i, message in enumerate(messages):
        blocks = [{"type": "text", "text": message.content}] if isinstance(message.content, str) else message.content
        where = f"messages.{i}.content"
        if message.role == "assistant":
            out.append(_assistant(blocks, where))
            called = {c["id"] for c in out[-1].get("tool_calls") or []}
            continue
        texts, images = [], []
        for j, block in enumerate(blocks):
            kind = _kind(block, f"{where}.{j}", ("text", "tool_result", "image", "document"))
            if kind == "image":
                images.append((len(texts), _image(block, f"{where}.{j}")))
                continue
            if kind == "tool_result":
                use_id = block.get("tool_use_id")
                if not isinstance(use_id, str) or use_id not in called:
                    raise bad_request(f"{where}.{j}: tool_result for tool_use_id {use_id!r}, which the previous "
                                      "assistant message does not call (each tool_result answers a tool_use of "
                                      "the turn just before it)")
                result = _text(block.get("content", ""), f"{where}.{j}.content")
                out.append({"role": "tool", "tool_call_id": use_id,
                            "content": f"Error: {result}" if block.get("is_error") else result})
            else:
                texts.append(_text([block], f"{where}.{j}"))
        if images:  # the text between images kept in place, each image an image_url part
            parts: list[dict] = []
            for k, text in enumerate(texts + [None]):
                parts += [image for at, image in images if at == k]
                if text is not None:
                    parts.append({"type": "text", "text": text if k == 0 else "\n\n" + text})
            out.append({"role": "user", "content": parts})
        elif texts or not blocks:
            out.append({"role": "user", "content": "\n\n".join(texts)})
        called = set()
    return out


def _assistant(blocks: list, where: str) -> dict:
    texts, calls, thoughts = [], [], []
    for j, block in enumerate(blocks):
        kind = _kind(block, f"{where}.{j}", ("text", "tool_use", "thinking", "redacted_thinking"))
        if kind == "text":
            texts.append(_string(block, "text", f"{where}.{j}"))
        elif kind == "tool_use":
            if not isinstance(block.get("input", {}), dict):
                raise bad_request(f"{where}.{j}.input must be an object")
            calls.append({"id": _string(block, "id", f"{where}.{j}"), "type": "function", "function": {
                "name": _string(block, "name", f"{where}.{j}"), "arguments": json.dumps(block.get("input", {}))}})
        elif kind == "thinking":
            thoughts.append(_string(block, "thinking", f"{where}.{j}"))
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    if thoughts:
        message["reasoning_content"] = "".join(thoughts)
    return message


def _image(block: dict, where: str) -> dict:
    """An image block (base64 source) as a chat image_url part; a URL source is refused by name."""
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        kind = source.get("type") if isinstance(source, dict) else None
        raise bad_request(f"{where}.source: only base64 images are taken ({{'type': 'base64', 'media_type', "
                          f"'data'}}), not {kind!r}: this server does not fetch images from the web")
    media, data = source.get("media_type"), source.get("data")
    if not isinstance(media, str) or not isinstance(data, str):
        raise bad_request(f"{where}.source needs media_type and data (base64)")
    return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}


def _kind(block: Any, where: str, allowed: tuple[str, ...]) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "document" or kind == "image" and kind not in allowed:
        raise bad_request(f"{where}: {kind} content is not supported here")
    if kind not in allowed:
        raise bad_request(f"{where}: unknown or misplaced content block type {kind!r} (expected one of "
                          f"{', '.join(a for a in allowed if a not in ('image', 'document'))})")
    return kind


def _string(block: dict, key: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise bad_request(f"{where}.{key} must be a string")
    return value


def _text(content: Any, where: str) -> str:
    """System prompt or tool_result content: a string, or text blocks (joined by blank lines)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(f"{where} must be a string or a list of text blocks")
    parts = []
    for j, block in enumerate(content):
        _kind(block, f"{where}.{j}", ("text",))
        parts.append(_string(block, "text", f"{where}.{j}"))
    return "\n\n".join(parts)


def _tool(tool: Any, i: int) -> dict:
    where = f"tools.{i}"
    if not isinstance(tool, dict):
        raise bad_request(f"{where} must be an object")
    if tool.get("type") not in (None, "custom"):
        raise bad_request(f"{where}: server tool {tool.get('type')!r} is not supported; give client tools "
                          "with name, description and input_schema")
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        raise bad_request(f"{where}.input_schema must be a JSON schema object")
    function = {"name": _string(tool, "name", where), "parameters": schema}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: ToolChoice, have_tools: bool) -> dict:
    parallel = {} if choice.disable_parallel_tool_use is None else {
        "parallel_tool_calls": not choice.disable_parallel_tool_use}
    if choice.type == "tool":
        if not choice.name:
            raise bad_request("tool_choice of type 'tool' needs the tool's name")
        return {"tool_choice": {"type": "function", "function": {"name": choice.name}}, **parallel}
    if choice.type == "none" and not have_tools:
        return {}
    return {"tool_choice": {"auto": "auto", "any": "required", "none": "none"}[choice.type], **parallel}


def _output_format(fmt: dict) -> dict:
    if fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
        raise bad_request('output_format takes {"type": "json_schema", "schema": {…}}')
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}

