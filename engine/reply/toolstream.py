"""Tool calls read from a reply while it streams, as OpenAI streams them: a call's id and name as soon
as the model has written the name, then its arguments in pieces as they come.

    stream = CallStream("hermes")
    for text in pieces:
        content, deltas = stream.feed(text)
    content, deltas = stream.finish()

A call whose name does not come first (a free model may write "arguments" before "name") is sent
whole once its object is complete. Text before a Hermes `<tool_call>` is content; a Llama 3 or
Mistral reply is either calls from its first character or plain text. Held text that turns out not
to be a call is given back as content.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional

from .toolcalls import ToolCall, call_from_object, new_call_id, opener

_HEAD = re.compile(r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*')
_NAMED = re.compile(r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
"""A call's head cut after its name (the token limit): the call is still sent, as OpenAI sends it."""
_JUNK = {"hermes": "", "llama3": "};, \n\t\r", "mistral": "}],; \n\t\r"}
_MARKERS = {"hermes": (), "llama3": ("<|python_tag|>",), "mistral": ("[TOOL_CALLS]", "[")}


@dataclass(frozen=True)
class CallDelta:
    """A piece of call `index`: the first piece has its id and name, every piece some arguments text."""

    index: int
    arguments: str
    id: Optional[str] = None
    name: Optional[str] = None


class _ValueEnd:
    """Where a JSON value ends, fed piece by piece (strings, escapes and nesting tracked)."""

    def __init__(self) -> None:
        self.depth, self.in_string, self.escaped, self.done = 0, False, False, False

    def feed(self, text: str) -> int:
        """How many characters of `text` belong to the value (all of them until it ends)."""
        for i, ch in enumerate(text):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.done = True
                    return i + 1
        return len(text)


class CallStream:
    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._buf = ""
        self._held = ""  # everything since calls began, while no call was sent: given back if none is
        self._mode = "undecided"
        self._arg: Optional[_ValueEnd] = None
        self._arg_fresh = False  # no character of the current call's arguments read yet
        self.calls = 0
        """Calls started so far."""

    def feed(self, text: str) -> tuple[str, list[CallDelta]]:
        if self._mode == "text":
            return text, []
        self._buf += text
        if self._mode == "undecided":
            content = self._decide()
            if self._mode != "calls":
                return content, []
            return content, self._calls()
        self._held += text
        return self._give_back_or(self._calls())

    def _decide(self) -> str:
        """Text mode or calls mode; returns content that is certainly text."""
        if self.fmt == "hermes":
            at = self._buf.find("<tool_call>")
            if at < 0:  # hold back a tail that could be the start of the marker
                keep = next((k for k in range(min(10, len(self._buf)), 0, -1) if "<tool_call>".startswith(self._buf[-k:])), 0)
                out, self._buf = self._buf[: len(self._buf) - keep], self._buf[len(self._buf) - keep:]
                return out
            out, self._buf = self._buf[:at], self._buf[at:]
        else:
            head = self._buf.lstrip()
            if not head:
                return ""
            if not any(head.startswith(o) or o.startswith(head) for o in opener(self.fmt)):
                self._mode = "text"
                out, self._buf = self._buf, ""
                return out
            out = ""
        self._mode, self._held = "calls", self._buf
        return out

    def _calls(self) -> list[CallDelta]:
        deltas: list[CallDelta] = []
        while True:
            if self._arg is not None:  # inside a call's arguments
                if self._arg_fresh:  # the blank before them, however the pieces fell (as _HEAD eats it whole)
                    self._buf = self._buf.lstrip()
                    if not self._buf:
                        return deltas
                    self._arg_fresh = False
                n = self._arg.feed(self._buf)
                piece, self._buf = self._buf[:n], self._buf[n:]
                if piece:
                    deltas.append(CallDelta(self.calls - 1, piece))
                if not self._arg.done:
                    return deltas
                self._arg = None
            if not self._next_call(deltas):
                return deltas

    def _next_call(self, deltas: list[CallDelta]) -> bool:
        """Start the next call if its head is in the buffer; False to wait for more text."""
        if self.fmt == "hermes":  # the marker stays in the buffer until the call's head is there
            at = self._buf.find("<tool_call>")
            if at < 0:
                return False
            rest = self._buf[at + len("<tool_call>"):].lstrip()
            return self._start(rest, deltas)
        while True:  # separators, closing brackets and markers between calls
            stripped = self._buf.lstrip(_JUNK[self.fmt])
            if any(m.startswith(stripped) and len(stripped) < len(m) for m in _MARKERS[self.fmt]):
                self._buf = stripped
                return False  # maybe a marker still being written
            for marker in _MARKERS[self.fmt]:
                stripped = stripped.removeprefix(marker)
            if stripped == self._buf:
                break
            self._buf = stripped
        return self._start(self._buf, deltas)

    def _start(self, text: str, deltas: list[CallDelta]) -> bool:
        """Begin the call at the start of `text` (which replaces the buffer once it does)."""
        head = _HEAD.match(text)
        if head is not None:
            self._buf = text[head.end():]
            deltas.append(CallDelta(self.calls, "", new_call_id(), json.loads(f'"{head.group(1)}"')))
            self.calls += 1
            self._arg, self._arg_fresh = _ValueEnd(), True
            return True
        try:  # another key order: the whole object once it is complete
            obj, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            return False
        call = call_from_object(obj, "parameters" if self.fmt == "llama3" else "arguments")
        if call is None:
            return False
        self._buf = text[end:]
        deltas.append(CallDelta(self.calls, call.arguments, call.id, call.name))
        self.calls += 1
        return True

    def _give_back_or(self, deltas: list[CallDelta]) -> tuple[str, list[CallDelta]]:
        if self.calls == 0 and self.fmt != "hermes" and self._buf.lstrip()[:1] not in ("", "{", "[", "<"):
            self._mode, text = "text", self._held  # it was not a call after all
            self._held = self._buf = ""
            return text, []
        return "", deltas

    def finish(self, cut: bool = False) -> tuple[str, list[CallDelta]]:
        """What is left once the reply ended: held text that never became a call comes back as text,
        unless the token limit `cut` a call before its name was written (then it is dropped: a
        marker such as `<tool_call>` is never content)."""
        if self._mode != "calls":  # undecided: maybe a marker's first characters, held back
            rest, self._buf = self._buf, ""
            return ("", []) if cut and _call_begins(self.fmt, rest) else (rest, [])
        deltas = self._calls()
        if cut and self._arg is None and (name := self._named_head()) is not None:
            deltas.append(CallDelta(self.calls, "", new_call_id(), name))  # cut after its name
            self.calls += 1
        if self.calls == 0:
            text, self._held, self._buf = self._held, "", ""
            return ("", []) if cut and _call_begins(self.fmt, text) else (text, [])
        return "", deltas

    def _named_head(self) -> Optional[str]:
        """The name of a call the buffer begins, written whole but not its arguments' key; None if not."""
        text = self._buf
        if self.fmt == "hermes":
            at = text.find("<tool_call>")
            text = text[at + len("<tool_call>"):] if at >= 0 else ""
        else:
            text = text.lstrip(_JUNK[self.fmt])
            for marker in _MARKERS[self.fmt]:
                text = text.removeprefix(marker).lstrip(_JUNK[self.fmt])
        head = _NAMED.match(text.lstrip())
        return json.loads(f'"{head.group(1)}"') if head is not None else None


def _call_begins(fmt: str, text: str) -> bool:
    """Whether held `text` is the start of a call: a marker or its first characters, or (Llama 3,
    Mistral) `{"name"` so far."""
    head = text.lstrip()
    markers = ("<tool_call>",) if fmt == "hermes" else tuple(m for m in _MARKERS[fmt] if m != "[")
    if head and any(head.startswith(m) or m.startswith(head) for m in markers):
        return True
    head = re.sub(r"\s", "", head.removeprefix("["))[:7]
    return fmt != "hermes" and bool(head) and '{"name"'.startswith(head)


def cut_reply(fmt: str, text: str) -> tuple[str, list[ToolCall]]:
    """(content, calls) of a reply the token limit cut, read as a stream reads it: the calls begun,
    the last one's arguments maybe unfinished JSON; a call cut before its name is dropped."""
    stream = CallStream(fmt)
    content, deltas = stream.feed(text)
    rest, more = stream.finish(cut=True)
    calls: list[ToolCall] = []
    for d in deltas + more:
        if d.id is not None:
            calls.append(ToolCall(d.name or "", d.arguments, d.id))
        else:
            calls[-1] = ToolCall(calls[-1].name, calls[-1].arguments + d.arguments, calls[-1].id)
    return (content + rest).rstrip(), calls
