"""Tools offered to one step of a reply, and the calls read back out of the step's text.

The app's tools (MCP servers, app/mcp) reach the model the way the local server's clients' tools
do: as OpenAI function tools in the chat template, a forced call through the engine's tool
constraint, and calls read from the reply in the model's own format (`engine.CallStream`, the
server's streaming reader). The user reads only the text around the calls; the calls are stored
with the reply (`Store.add_tool_calls`) and answered by the app before the next step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

from app.store import ToolCallRecord
from engine import CallDelta, CallStream


@dataclass(frozen=True)
class ToolOffer:
    """What one step of a reply may call."""

    tools: tuple[dict, ...]
    """OpenAI function tools ({"type": "function", "function": {name, description, parameters}})."""
    servers: dict[str, str] = field(default_factory=dict, hash=False)
    """Function name -> the MCP server that offers it."""
    forced: bool = False
    """The step must make one call of them (tool_choice "required"), else the model chooses."""


class CallReader:
    """Feeds a step's streamed text through the model's call format: `feed` returns what the user
    reads; `calls` the calls made, once the step ended."""

    def __init__(self, fmt: str) -> None:
        self._stream = CallStream(fmt)
        self._parts: dict[int, list] = {}  # index -> [id, name, argument pieces]

    def feed(self, text: str) -> str:
        content, deltas = self._stream.feed(text)
        self._add(deltas)
        return content

    def finish(self) -> str:
        """The text held back that turned out not to be a call ("" when it was)."""
        content, deltas = self._stream.finish()
        self._add(deltas)
        return content

    def _add(self, deltas: list[CallDelta]) -> None:
        for d in deltas:
            part = self._parts.setdefault(d.index, [d.id, d.name, []])
            part[2].append(d.arguments)

    def calls(self, offer: ToolOffer, step: int, offset: int) -> list[ToolCallRecord]:
        """Complete calls of offered tools (a call cut by the token limit, or of an unknown tool, is
        left out: there is nothing to run)."""
        out = []
        for call_id, name, pieces in (self._parts[i] for i in sorted(self._parts)):
            arguments = "".join(pieces).strip()
            try:
                valid = isinstance(json.loads(arguments), dict)
            except ValueError:
                valid = False
            if valid and name in offer.servers:
                out.append(ToolCallRecord(step=step, offset=offset, call_id=call_id or "", tool=name,
                                          server=offer.servers[name], arguments=arguments))
        return out


def last_step(tool_calls: tuple[ToolCallRecord, ...]) -> int:
    """The highest step of a reply's calls (0: none yet)."""
    return max((c.step for c in tool_calls), default=0)


def pending(tool_calls: tuple[ToolCallRecord, ...]) -> list[ToolCallRecord]:
    return [c for c in tool_calls if c.status == "pending"]


def no_offer(_store, _conversation_id: int, _step: int) -> Optional[ToolOffer]:
    """The manager's default: no tools."""
    return None
