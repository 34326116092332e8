"""Tool calls a reply made (MCP tools, app/mcp) and their results: the record, and the table functions
the `Store` calls.

One assistant message holds a whole tool-using turn: its text, and its calls in steps. Step 1's
calls were written after the first `offset` characters of the text; their results went back to the
model, whose next step's text follows in the same message, and so on. So regenerating, versions and
export treat the turn as one reply, and `app.conversations.prompt` unfolds it into the assistant /
tool / assistant messages the model sees. Which servers a conversation may use is kept here too.

These are functions over a sqlite-utils `Database`; callers hold the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from sqlite_utils import Database

from .errors import InvalidValueError, NotFoundError

TOOL_STATUSES: tuple[str, ...] = ("pending", "done", "denied", "failed")
"""pending: not answered yet; done: the tool's result; denied: the user said no; failed: the tool or
its server failed, timed out or crashed (the result says what happened)."""


@dataclass(frozen=True)
class ToolCallRecord:
    """One call of a tool by the model, and what came back."""

    step: int
    """Which step of the reply made it (1, 2, ...): calls of one step went back to the model together."""
    offset: int
    """Characters of the message's text written before this step's calls."""
    call_id: str
    server: str
    """The MCP server that offers the tool ("" when unknown)."""
    tool: str
    arguments: str
    """JSON text, as the model wrote it."""
    status: str = "pending"
    result: str = ""
    """The tool's text result, or why there is none; what the model is sent."""
    id: Optional[int] = None

    @classmethod
    def from_row(cls, row: dict) -> "ToolCallRecord":
        return cls(step=row["step"], offset=row["offset"], call_id=row["call_id"], server=row["server"],
                   tool=row["tool"], arguments=row["arguments"], status=row["status"], result=row["result"],
                   id=row["id"])

    def as_dict(self) -> dict[str, Any]:
        """The export form."""
        return {"step": self.step, "offset": self.offset, "call_id": self.call_id, "server": self.server,
                "tool": self.tool, "arguments": self.arguments, "status": self.status, "result": self.result}

    @classmethod
    def from_dict(cls, d: Any) -> "ToolCallRecord":
        if not isinstance(d, dict):
            raise InvalidValueError(f"a tool call must be an object, not {d!r}")
        try:
            record = cls(step=int(d["step"]), offset=int(d["offset"]), call_id=str(d["call_id"]),
                         server=str(d.get("server", "")), tool=str(d["tool"]), arguments=str(d["arguments"]),
                         status=str(d["status"]), result=str(d.get("result", "")))
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidValueError(f"a tool call lacks or mistypes {e}") from None
        if record.status not in TOOL_STATUSES:
            raise InvalidValueError(f"tool call status must be one of {', '.join(TOOL_STATUSES)}")
        return record


def insert(db: Database, message_id: int, calls: Iterable[ToolCallRecord], now: float) -> None:
    """Add calls to a message after the ones it has."""
    start = db.execute("select count(*) from tool_calls where message_id = ?", [message_id]).fetchone()[0]
    for i, c in enumerate(calls):
        db["tool_calls"].insert({"message_id": message_id, "position": start + i, "step": c.step,
                                 "offset": c.offset, "call_id": c.call_id, "server": c.server, "tool": c.tool,
                                 "arguments": c.arguments, "status": c.status, "result": c.result,
                                 "created_at": now, "updated_at": now})


def set_result(db: Database, call_row_id: int, status: str, result: str, now: float) -> int:
    """Record how a call ended; returns its message's id."""
    if status not in TOOL_STATUSES or status == "pending":
        raise InvalidValueError(f"a call ends done, denied or failed, not {status!r}")
    row = db.execute("select message_id from tool_calls where id = ?", [call_row_id]).fetchone()
    if row is None:
        raise NotFoundError(f"No tool call {call_row_id}.")
    db["tool_calls"].update(call_row_id, {"status": status, "result": result, "updated_at": now})
    return row[0]


def for_messages(db: Database, message_ids: list[int]) -> dict[int, tuple[ToolCallRecord, ...]]:
    """Each message's calls, in order (messages without calls are left out)."""
    out: dict[int, list[ToolCallRecord]] = {}
    for chunk in (message_ids[i:i + 500] for i in range(0, len(message_ids), 500)):
        marks = ",".join("?" * len(chunk))
        rows = db.execute(f"select * from tool_calls where message_id in ({marks}) order by message_id, position",
                          chunk)
        names = [d[0] for d in rows.description]
        for values in rows.fetchall():
            row = dict(zip(names, values))
            out.setdefault(row["message_id"], []).append(ToolCallRecord.from_row(row))
    return {k: tuple(v) for k, v in out.items()}


def servers(db: Database, conversation_id: int) -> list[str]:
    """Names of the MCP servers the conversation may use."""
    rows = db.execute("select server from conversation_servers where conversation_id = ? order by server",
                      [conversation_id]).fetchall()
    return [r[0] for r in rows]


def set_servers(db: Database, conversation_id: int, names: Iterable[str]) -> None:
    db.execute("delete from conversation_servers where conversation_id = ?", [conversation_id])
    for name in sorted(set(names)):
        db["conversation_servers"].insert({"conversation_id": conversation_id, "server": name})
