"""POST /v1/responses request body (OpenAI's Responses API), and its translation into the one
internal request every API uses: a `ChatCompletionRequest` (messages, tools, constraint, sampling).

Input items are checked here with clear messages: messages (text parts only), function_call,
function_call_output (whose call must come before it) and reasoning items (read, not shown to the
model again, as chat templates drop earlier reasoning). Fields that change nothing are accepted;
fields that would change the result and are not implemented are refused, as for chat/completions.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..chat.schemas import ChatCompletionRequest
from ..errors import APIError, bad_request

TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextFormat(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text", "json_object", "json_schema"] = "text"
    name: Optional[str] = None
    schema_: Optional[dict[str, Any]] = Field(default=None, alias="schema")
    strict: Optional[bool] = None
    description: Optional[str] = None


class TextConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")  # verbosity: a hint to the model, nothing to enforce
    format: Optional[TextFormat] = None


class Reasoning(BaseModel):
    model_config = ConfigDict(extra="ignore")
    effort: Optional[Literal["none", "minimal", "low", "medium", "high", "xhigh"]] = None
    summary: Optional[str] = None
    generate_summary: Optional[str] = None


class ResponsesRequest(_Body):
    """POST /v1/responses."""

    model: Optional[str] = None
    input: Union[str, list[dict[str, Any]]]
    instructions: Optional[str] = None
    tools: Optional[list[dict[str, Any]]] = None
    tool_choice: Optional[Union[Literal["none", "auto", "required"], dict[str, Any]]] = None
    parallel_tool_calls: Optional[bool] = None
    text: Optional[TextConfig] = None
    max_output_tokens: Optional[int] = Field(default=None, ge=1)
    temperature: Optional[float] = Field(default=None, ge=0, le=2)
    top_p: Optional[float] = Field(default=None, ge=0, le=1)
    reasoning: Optional[Reasoning] = None
    stream: bool = False
    store: Optional[bool] = None
    """Stateless unless true (as Codex sends it): only stored responses can be continued or read."""
    previous_response_id: Optional[str] = Field(default=None, max_length=200)
    truncation: Optional[Literal["auto", "disabled"]] = None
    """OpenAI's: "auto" drops the oldest items to fit (the "rolling" policy); "disabled" refuses."""
    speculative: bool = True
    """Confab's extension, as on chat: false never drafts tokens for this reply (the same text either way)."""
    context_policy: Optional[Literal["refuse", "middle", "rolling"]] = None
    """This server's policy names (engine.reply.truncation); wins over `truncation`."""
    seed: Optional[int] = None
    # Accepted because they change nothing here.
    metadata: Optional[dict[str, Any]] = None
    user: Optional[str] = None
    include: Optional[list[str]] = None
    prompt_cache_key: Optional[str] = None
    prompt_cache_retention: Optional[str] = None
    safety_identifier: Optional[str] = None
    service_tier: Optional[str] = None
    stream_options: Optional[dict[str, Any]] = None
    max_tool_calls: Optional[int] = None
    top_logprobs: Optional[int] = None
    background: Optional[bool] = None
    conversation: Optional[Any] = None

    @field_validator("background")
    @classmethod
    def _foreground(cls, value: Optional[bool]) -> Optional[bool]:
        if value:
            raise ValueError("background responses are not supported")
        return value

    @field_validator("conversation")
    @classmethod
    def _no_conversation(cls, value: Any) -> Any:
        if value is not None:
            raise ValueError("conversations are not supported; use store: true and previous_response_id")
        return value

    @field_validator("top_logprobs")
    @classmethod
    def _no_logprobs(cls, value: Optional[int]) -> Optional[int]:
        if value:
            raise ValueError("top_logprobs is not supported on /v1/responses; use /v1/chat/completions")
        return value

    @property
    def policy(self) -> str:
        if self.context_policy is not None:
            return self.context_policy
        return "rolling" if self.truncation == "auto" else "refuse"

    def items(self) -> list[dict]:
        """The input as items (a string is one user message)."""
        if isinstance(self.input, str):
            return [{"type": "message", "role": "user", "content": self.input}]
        return list(self.input)


def chat_messages(items: list[dict]) -> list[dict]:
    """Items as chat messages (the shape `ChatMessage` reads): consecutive function calls, and calls
    right after an assistant message, join that assistant turn; each output is a tool message."""
    out: list[dict] = []
    calls: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise bad_request(f"input[{i}] must be an object")
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = _need(item, "role", i)
            if role not in ("user", "assistant", "system", "developer"):
                raise bad_request(f"input[{i}].role must be user, assistant, system or developer, not {role!r}")
            out.append({"role": role, "content": _content(item.get("content"), i)})
        elif kind == "function_call":
            call_id, name = _need(item, "call_id", i), _need(item, "name", i)
            call = {"id": call_id, "type": "function",
                    "function": {"name": name, "arguments": item.get("arguments") or "{}"}}
            calls.add(call_id)
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
                last["content"] = last["content"] or None
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            call_id = _need(item, "call_id", i)
            if call_id not in calls:
                raise bad_request(f"input[{i}]: function_call_output {call_id!r} answers no function_call "
                                  "before it (send the call, or continue with previous_response_id)",
                                  "tool_output_without_call")
            out.append({"role": "tool", "tool_call_id": call_id, "content": _text(item.get("output"), i)})
        elif kind == "reasoning":
            continue
        else:
            raise bad_request(f"input[{i}]: item type {kind!r} is not supported (message, function_call, "
                              "function_call_output, reasoning)", "unsupported_item")
    return out


def chat_request(body: ResponsesRequest, messages: list[dict]) -> ChatCompletionRequest:
    """The internal request: what chat/completions would be sent for the same thing."""
    chat: dict[str, Any] = {"model": body.model, "messages": messages, "stream": body.stream,
                            "temperature": body.temperature, "top_p": body.top_p, "seed": body.seed,
                            "max_tokens": body.max_output_tokens, "parallel_tool_calls": body.parallel_tool_calls,
                            "context_policy": body.policy, "speculative": body.speculative}
    if body.tools:
        chat["tools"] = [_chat_tool(t, i) for i, t in enumerate(body.tools)]
    if body.tool_choice is not None:
        choice = body.tool_choice
        if isinstance(choice, dict):
            if choice.get("type") != "function" or not choice.get("name"):
                raise bad_request("tool_choice must be none, auto, required or {\"type\": \"function\", "
                                  "\"name\": ...}", "invalid_tool_choice")
            choice = {"type": "function", "function": {"name": choice["name"]}}
        chat["tool_choice"] = choice
    fmt = body.text.format if body.text else None
    if fmt is not None and fmt.type == "json_schema":
        if fmt.schema_ is None:
            raise bad_request("text.format json_schema needs a schema", "invalid_json_schema")
        chat["response_format"] = {"type": "json_schema", "json_schema": {
            "name": fmt.name or "response", "schema": fmt.schema_, "strict": fmt.strict}}
    elif fmt is not None:
        chat["response_format"] = {"type": fmt.type}
    try:
        return ChatCompletionRequest.model_validate({k: v for k, v in chat.items() if v is not None})
    except ValidationError as e:
        where = "; ".join(f"{'.'.join(str(p) for p in x['loc'])}: {x['msg']}" for x in e.errors()[:5])
        raise bad_request(f"invalid request body: {where}") from None


def thinking(body: ResponsesRequest, switch: bool) -> Optional[bool]:
    """reasoning.effort on the model's Think switch: "none"/"minimal" off, any other on; None (the
    model's default) when not asked or when the model has no switch."""
    if not switch or body.reasoning is None or body.reasoning.effort is None:
        return None
    return body.reasoning.effort not in ("none", "minimal")


def _chat_tool(tool: dict, i: int) -> dict:
    if tool.get("type") != "function":
        raise APIError(400, f"tools[{i}]: only function tools are supported here, not {tool.get('type')!r}",
                       "unsupported_tool")
    function = {k: tool[k] for k in ("name", "description", "parameters", "strict") if tool.get(k) is not None}
    return {"type": "function", "function": function}


def _need(item: dict, key: str, i: int) -> Any:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise bad_request(f"input[{i}] ({item.get('type') or 'message'}) needs {key}")
    return value


def _content(content: Any, i: int) -> Any:
    """A message's content: its text, or, where it holds `input_image` parts, chat parts with the
    images as `image_url` parts (a data URL; a file id or a web address is refused by name)."""
    if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") == "input_image"
                                                for p in content):
        return _text(content, i)
    parts = []
    for j, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "input_image":
            url = part.get("image_url")
            if not isinstance(url, str) or not url:
                raise bad_request(f"input[{i}].content[{j}]: input_image needs image_url (a data URL); file ids "
                                  "are not supported here", "invalid_image")
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            parts.append({"type": "text", "text": _text([part], i)})
    return parts


def _text(content: Any, i: int) -> str:
    """A message's text: a string, or its text parts joined; other parts are refused by name."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(f"input[{i}].content must be a string or a list of parts")
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "refusal":
            texts.append(part.get("refusal") or "")
        elif kind in TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            raise bad_request(f"input[{i}]: content part {kind!r} is not supported here (input_text, "
                              "output_text, input_image)", "unsupported_content")
    return "".join(texts)
