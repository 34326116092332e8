"""Tool calls in the model's own format: how tools reach the template, how a forced call is
constrained, and how calls are read back out of the reply's text.

The format is picked from the chat template (the model was trained on what its template writes):

- "hermes" (Hermes, Qwen 2/2.5/3 and most others): `<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>`,
  one block per call;
- "llama3" (Llama 3.1–3.3): one JSON object `{"name": …, "parameters": {…}}`, maybe after `<|python_tag|>`;
- "mistral": `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`.

A template that knows nothing of tools gets them the Hermes way: a system message lists them, earlier
calls become `<tool_call>` text and results `<tool_response>` user turns. Written here rather than
taken from a library: transformers renders tools but does not parse calls, and the parsers of vLLM
and llama.cpp's server are not importable on their own.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, Optional

from .constraint import JSON_OPTIONS, Constraint, closed_objects
from ..errors import InvalidRequestError

FORMATS = ("hermes", "llama3", "mistral")
MAX_PARALLEL_CALLS = 8
"""Most calls a forced turn may hold: a weak model left free to go on could fill the token limit."""


@dataclass(frozen=True)
class ToolCall:
    """One call read from a reply: the function's name and its arguments as JSON text."""

    name: str
    arguments: str
    id: str = ""


def check_tools(tools: object) -> None:
    """InvalidRequestError unless `tools` is a list of OpenAI function tools (each with a name)."""
    ok = isinstance(tools, list) and all(
        isinstance(t, dict) and isinstance(t.get("function", t), dict)
        and isinstance(t.get("function", t).get("name"), str)
        and isinstance(t.get("function", t).get("parameters") or {}, dict) for t in tools)
    if not ok:
        raise InvalidRequestError("tools must be a list of {'type': 'function', 'function': {'name': ..., "
                                  "'parameters': {...}}}")


def new_call_id() -> str:
    """9 letters and digits: what Mistral's templates require, and any OpenAI client accepts."""
    return uuid.uuid4().hex[:9]


def detect_format(template: Optional[str]) -> tuple[str, bool]:
    """(format, whether the template renders tools itself) for a chat template."""
    t = template or ""
    native = "tools" in t
    if "[TOOL_CALLS]" in t:
        return "mistral", native
    if "<|python_tag|>" in t or ("ipython" in t and '"parameters"' in t):
        return "llama3", native
    return "hermes", native


# -- prompt ------------------------------------------------------------------------------------------
def template_messages(messages: list[dict], tools: Optional[list[dict]], fmt: str, native: bool) -> tuple[list[dict], Optional[list[dict]]]:
    """Messages and tools as Hugging Face chat templates expect them (OpenAI's shapes differ a little:
    arguments are JSON text there, a dict here; a tool result names its call's id, not its function)."""
    names = {}
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                function = call.get("function", call)
                names[call.get("id")] = function.get("name")
                calls.append({"id": _call_id(call.get("id"), fmt), "type": "function",
                              "function": {"name": function.get("name"), "arguments": _json_or_text(function.get("arguments"))}})
            m["tool_calls"] = calls
        else:
            m.pop("tool_calls", None)
        if m.get("content") is None:
            m["content"] = ""
        if m["role"] == "tool":
            m.setdefault("name", names.get(m.get("tool_call_id")) or "")
            m["tool_call_id"] = _call_id(m.get("tool_call_id"), fmt)
        out.append(m)
    if native:
        return out, [_described(t) for t in tools] if tools else None
    return _hermes_fallback(out, tools), None


def _described(tool: dict) -> dict:
    """A tool with a description and parameters (templates concatenate them without checking)."""
    function = {k: v for k, v in tool.get("function", tool).items() if v is not None}
    function.setdefault("description", "")
    function.setdefault("parameters", {"type": "object", "properties": {}})
    return {"type": "function", "function": function}


def _json_or_text(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _call_id(call_id: Optional[str], fmt: str) -> str:
    """Mistral's templates refuse ids that are not 9 letters or digits: map others to one, stably."""
    call_id = call_id or ""
    if fmt == "mistral" and not re.fullmatch(r"[A-Za-z0-9]{9}", call_id):
        return hashlib.sha256(call_id.encode()).hexdigest()[:9]
    return call_id


HERMES_SYSTEM = (
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> "
    'XML tags:\n<tool_call>\n{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


def _hermes_fallback(messages: list[dict], tools: Optional[list[dict]]) -> list[dict]:
    """For templates without tools: the Hermes prompt (as Qwen 2.5's template writes it) in plain turns."""
    out = []
    for m in messages:
        if m["role"] == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{m['content']}\n</tool_response>"})
        elif m.get("tool_calls"):
            blocks = [hermes_block(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": "\n".join(([m["content"]] if m["content"] else []) + blocks)})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    if tools:
        listing = HERMES_SYSTEM.format(tools="\n".join(json.dumps(t) for t in tools))
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n# Tools\n\n" + listing}
        else:
            out.insert(0, {"role": "system", "content": listing})
    return out


def hermes_block(name: str, arguments: Any) -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {args}}}\n</tool_call>'


# -- forcing a call ----------------------------------------------------------------------------------
def call_constraint(fmt: str, tools: list[dict], parallel: bool, special: dict[str, int]) -> Constraint:
    """A grammar that admits only calls of `tools` in format `fmt`, arguments valid for their schemas
    (objects that do not say otherwise take only their listed properties), at most MAX_PARALLEL_CALLS.

    `special`: marker text -> token id where the marker is one special token in the vocabulary (the
    model then writes it as that token, as in training).
    """
    key = "parameters" if fmt == "llama3" else "arguments"
    one = {"anyOf": [_call_schema(t, key) for t in tools], "x-guidance": JSON_OPTIONS}
    if fmt == "llama3":
        return Constraint.lark(f"start: {_marker('<|python_tag|>', special, optional=True)}%json {json.dumps(one)}")
    if fmt == "mistral":
        array = {"type": "array", "items": one, "minItems": 1, "x-guidance": JSON_OPTIONS}
        if not parallel:
            array["maxItems"] = 1
        else:
            array["maxItems"] = MAX_PARALLEL_CALLS
        return Constraint.lark(f"start: {_marker('[TOOL_CALLS]', special)} %json {json.dumps(array)}")
    call = f'call: {_marker("<tool_call>", special)} "\\n" %json {json.dumps(one)} "\\n" {_marker("</tool_call>", special)}'
    more = f' ("\\n" call){{0,{MAX_PARALLEL_CALLS - 1}}}' if parallel else ""
    return Constraint.lark(f"start: call{more}\n{call}")


def _call_schema(tool: dict, key: str) -> dict:
    function = tool.get("function", tool)
    # Only the listed arguments, as OpenAI's strict mode: left open, a weak model invents more forever.
    params = closed_objects(function.get("parameters") or {"type": "object", "properties": {}})
    return {"type": "object", "properties": {"name": {"const": function["name"]}, key: params},
            "required": ["name", key], "additionalProperties": False}


def _marker(text: str, special: dict[str, int], optional: bool = False) -> str:
    if text in special:
        token = f"<[{special[text]}]>"
        return f"{token}? " if optional else token
    return "" if optional else json.dumps(text)


# -- reading calls back --------------------------------------------------------------------------------
def parse(fmt: str, text: str) -> tuple[str, list[ToolCall]]:
    """(text before the calls, calls) of a finished reply; ([text], []) when it holds no valid call."""
    if fmt == "hermes":
        start = text.find("<tool_call>")
        if start < 0:
            return text, []
        calls = _hermes_calls(text[start:])
        return (text[:start].rstrip(), calls) if calls else (text, [])
    body = text.strip()
    for marker in ("[TOOL_CALLS]", "<|python_tag|>"):
        body = body.removeprefix(marker).lstrip()
    if fmt == "mistral" and body.startswith("["):
        try:
            items = json.loads(body)
        except ValueError:
            return text, []
        calls = [call_from_object(i, "arguments") for i in items] if isinstance(items, list) else [None]
        return ("", calls) if calls and all(calls) else (text, [])
    if fmt == "llama3" and body.startswith("{"):
        call = _one_call(body, "parameters")
        return ("", [call]) if call else (text, [])
    return text, []


def _hermes_calls(text: str) -> list[ToolCall]:
    """Every `<tool_call>{…}</tool_call>` block of `text` (which starts with the first), or [] if any
    is malformed. The JSON is read first and the closing tag after it: the tag's text may sit inside
    a JSON string (an agent writing a file that mentions it). The last block may lack its closing
    tag (a stop string, or the end of the reply); text between or after blocks is not a call."""
    calls, decoder = [], json.JSONDecoder()
    at = text.find("<tool_call>")
    while at >= 0:
        at += len("<tool_call>")
        at += len(text[at:]) - len(text[at:].lstrip())
        try:
            obj, at = decoder.raw_decode(text, at)
        except ValueError:
            return []
        call = call_from_object(obj, "arguments")
        if call is None:
            return []
        calls.append(call)
        at = text.find("<tool_call>", at)
    return calls


def _one_call(text: str, key: str) -> Optional[ToolCall]:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return call_from_object(obj, key)


def call_from_object(obj: Any, key: str) -> Optional[ToolCall]:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get(key, obj.get("arguments", obj.get("parameters", {})))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return ToolCall(obj["name"], json.dumps(args, ensure_ascii=False), new_call_id())


def opener(fmt: str) -> tuple[str, ...]:
    """Text that may begin a call: held back while streaming until it is clear what it is."""
    return {"hermes": ("<tool_call>",), "llama3": ("<|python_tag|>", "{"), "mistral": ("[TOOL_CALLS]", "[")}[fmt]

