"""Confab's changes to `mcp.json` (add or remove a server, the limits), made in the file's text.

The file is the user's: they write it by hand or copy Cursor's or Claude's in, also while Confab
runs. So every change reads the file as it is on disk now and edits only the member it is about;
everything else (other servers, keys Confab does not know, order, indentation, a one-line `args`)
stays byte for byte. Serializing a parsed copy back would lose all of that, and writing the app's
own idea of the servers lost the entries written since it last read the file. A file that does not
parse is never written over: the ConfigError says where it breaks.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .config import ConfigError, ServerConfig, config_path, parse_json

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\r\n]*")


@dataclass(frozen=True)
class Member:
    """One `"key": value` of an object, as offsets into the file's text."""

    key: str
    start: int
    """The key's opening quote."""
    value_start: int
    end: int
    """Just past the value."""


@dataclass(frozen=True)
class Span:
    """An object in the text: its braces and members."""

    open: int
    close: int
    members: tuple[Member, ...]

    def find(self, key: str) -> Member | None:
        """The member `key` (the last one, as `json.loads` keeps the last of repeated keys)."""
        return next((m for m in reversed(self.members) if m.key == key), None)


def add_server(home: Path, server: ServerConfig) -> None:
    """Add `server` at the end of `mcpServers`; refused when the file has one of that name already."""
    def change(text: str, top: Span) -> str:
        servers = top.find("mcpServers")
        if servers is None:
            return _add(text, top, "mcpServers", {server.name: server.as_json()})
        span = _object_at(text, servers.value_start)
        if span.find(server.name) is not None:
            raise ConfigError(f"mcp.json has a server named {server.name!r} already")
        return _add(text, span, server.name, server.as_json())
    _edit(home, change)


def remove_server(home: Path, name: str) -> None:
    """Take the server `name` out of `mcpServers` (every entry of that name); the rest stays."""
    def change(text: str, top: Span) -> str:
        while (servers := top.find("mcpServers")) is not None:
            span = _object_at(text, servers.value_start)
            if span.find(name) is None:
                break
            text = _remove(text, span, name)
            top = _object_at(text, _skip(text, 0))
        return text
    _edit(home, change)


def set_limits(home: Path, step_limit: int, timeout_s: float) -> None:
    """Confab's own keys (`confab.stepLimit`, `confab.timeoutSeconds`), added or changed in place."""
    def change(text: str, top: Span) -> str:
        own = top.find("confab")
        if own is None:
            return _add(text, top, "confab", {"stepLimit": step_limit, "timeoutSeconds": timeout_s})
        if text[own.value_start] != "{":
            raise ConfigError('mcp.json: "confab" must be an object')
        text = _set(text, _object_at(text, own.value_start), "stepLimit", step_limit)
        own = _object_at(text, _skip(text, 0)).find("confab")
        return _set(text, _object_at(text, own.value_start), "timeoutSeconds", timeout_s)
    _edit(home, change)


def set_require_call(home: Path, on: bool) -> None:
    """`confab.requireToolCall`: a reply's first step must call a tool (kept across restarts)."""
    def change(text: str, top: Span) -> str:
        own = top.find("confab")
        if own is None:
            return _add(text, top, "confab", {"requireToolCall": on})
        if text[own.value_start] != "{":
            raise ConfigError('mcp.json: "confab" must be an object')
        return _set(text, _object_at(text, own.value_start), "requireToolCall", on)
    _edit(home, change)


def check_writable(home: Path) -> None:
    """ConfigError when Confab could not change `mcp.json` now (it does not parse, say)."""
    _current(config_path(home))


# -- the text -------------------------------------------------------------------------------------
def _current(path: Path) -> str:
    """The file's text (an empty object for none) once it parses as an object whose `mcpServers`,
    if any, is one too."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "{\n}\n"
    except OSError as e:
        raise ConfigError(f"mcp.json could not be read: {e}") from None
    if not text.strip():
        return "{\n}\n"
    raw = parse_json(text)
    if not isinstance(raw.get("mcpServers", {}), dict):
        raise ConfigError('mcp.json: "mcpServers" must be an object of servers by name')
    return text


def _edit(home: Path, change: Callable[[str, Span], str]) -> None:
    path = config_path(home)
    text = _current(path)
    new = change(text, _object_at(text, _skip(text, 0)))
    if new == text:
        return
    parse_json(new)  # never write what would not read back
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)


def _skip(text: str, i: int) -> int:
    return _SPACE.match(text, i).end()


def _object_at(text: str, i: int) -> Span:
    """The object whose `{` is at `i` (the text is known to parse)."""
    members, j = [], _skip(text, i + 1)
    while text[j] != "}":
        key, key_end = _DECODER.raw_decode(text, j)
        value = _skip(text, _skip(text, key_end) + 1)  # past the colon
        _, end = _DECODER.raw_decode(text, value)
        members.append(Member(key, j, value, end))
        j = _skip(text, end)
        if text[j] == ",":
            j = _skip(text, j + 1)
    return Span(i, j, tuple(members))


def _line_indent(text: str, i: int) -> str:
    """The white space that starts the line holding offset `i`."""
    start = text.rfind("\n", 0, i) + 1
    return _SPACE.match(text, start).group().strip("\r\n")


def _unit(text: str) -> str:
    """The file's indentation step (the first indented line's), two spaces when it has none."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def _dump(value: Any, indent: str | None, unit: str) -> str:
    if indent is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def _add(text: str, span: Span, key: str, value: Any) -> str:
    """`"key": value` after the last member of `span`, laid out as that member is."""
    unit = _unit(text)
    if not span.members:
        outer = _line_indent(text, span.open)
        if "\n" not in text.strip():  # a one-line file stays one line
            return text[:span.open + 1] + f"{json.dumps(key)}: {_dump(value, None, unit)}" + text[span.close:]
        inner = outer + unit
        return (text[:span.open + 1] + f"\n{inner}{json.dumps(key)}: {_dump(value, inner, unit)}\n{outer}"
                + text[span.close:])
    last = span.members[-1]
    own_line = not text[text.rfind("\n", 0, last.start) + 1:last.start].strip()
    indent = _line_indent(text, last.start) if own_line else None
    gap = f"\n{indent}" if own_line else " "
    return text[:last.end] + f",{gap}{json.dumps(key)}: {_dump(value, indent, unit)}" + text[last.end:]


def _set(text: str, span: Span, key: str, value: Any) -> str:
    member = span.find(key)
    if member is None:
        return _add(text, span, key, value)
    return text[:member.value_start] + json.dumps(value) + text[member.end:]


def _remove(text: str, span: Span, key: str) -> str:
    index = max(i for i, m in enumerate(span.members) if m.key == key)
    member = span.members[index]
    if len(span.members) == 1:
        return text[:span.open + 1] + text[span.close:]
    if index > 0:  # from the comma after the one before it
        return text[:span.members[index - 1].end] + text[member.end:]
    return text[:member.start] + text[span.members[1].start:]
