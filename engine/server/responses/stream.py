"""A Response's output items, built piece by piece, with the events that stream them.

One writer serves both ways of answering: a streamed response sends its events as they come; a
whole one feeds the finished reply through the same writer and keeps only the items, so both give
the same output. Items: a `reasoning` item (a thinking model's reasoning), `message` items with
one `output_text` part, and one `function_call` item per call, in the order the model wrote them.
"""

from __future__ import annotations

import json
import uuid
from typing import AsyncIterator, Callable, Optional

from ...reply.toolstream import CallDelta
from ..chat.replies import Shape, _Calls
from ..errors import APIError
from ..generation import Piece, Reply, Usage
from ..json_text import json_bytes


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class OutputWriter:
    """Output items and their events; `events` collects what is to be sent next."""

    def __init__(self) -> None:
        self.items: list[dict] = []
        self.events: list[dict] = []
        self._open: Optional[dict] = None  # the item being written
        self._calls: dict[int, dict] = {}  # CallDelta.index -> its item
        self._blank = ""  # whitespace held until it turns out to belong to a message

    # -- what the model writes ---------------------------------------------------------------------
    def reasoning(self, text: str) -> None:
        if not text:
            return
        item = self._item("reasoning")
        item["content"][0]["text"] += text
        self._event("response.reasoning_text.delta", item, content_index=0, delta=text)

    def text(self, text: str) -> None:
        if not text:
            return
        if (self._open is None or self._open["type"] != "message") and not text.strip():
            self._blank += text  # e.g. the newline before a Hermes <tool_call>: not a message of its own
            return
        text, self._blank = self._blank + text, ""
        item = self._item("message")
        item["content"][0]["text"] += text
        self._event("response.output_text.delta", item, content_index=0, delta=text, logprobs=[])

    def call(self, delta: CallDelta) -> None:
        item = self._calls.get(delta.index)
        if item is None:
            self._close()
            item = {"id": new_id("fc"), "type": "function_call", "status": "in_progress",
                    "call_id": delta.id, "name": delta.name, "arguments": ""}
            self._calls[delta.index] = item
            self._add(item)
        if delta.arguments:
            item["arguments"] += delta.arguments
            self._event("response.function_call_arguments.delta", item, delta=delta.arguments)

    def finish(self, complete: bool) -> None:
        """Close the last item; `complete` False when the token limit cut the reply."""
        if self._blank and not self.items:  # a reply of whitespace only is still a message
            blank, self._blank = self._blank, ""
            item = self._item("message")
            item["content"][0]["text"] += blank
            self._event("response.output_text.delta", item, content_index=0, delta=blank, logprobs=[])
        self._close("completed" if complete else "incomplete")

    # -- items -------------------------------------------------------------------------------------
    def _item(self, kind: str) -> dict:
        if self._open is not None and self._open["type"] == kind:
            return self._open
        self._close()
        if kind == "reasoning":
            item = {"id": new_id("rs"), "type": "reasoning", "summary": [],
                    "content": [{"type": "reasoning_text", "text": ""}], "status": "in_progress"}
            part = {"type": "reasoning_text", "text": ""}
        else:
            item = {"id": new_id("msg"), "type": "message", "status": "in_progress", "role": "assistant",
                    "content": [{"type": "output_text", "text": "", "annotations": [], "logprobs": []}]}
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        self._add({**item, "content": []}, item)
        self._event("response.content_part.added", item, content_index=0, part=part)
        self._open = item
        return item

    def _add(self, shown: dict, item: Optional[dict] = None) -> None:
        item = item or shown
        self.items.append(item)
        self._event("response.output_item.added", item, item=json.loads(json.dumps(shown)))
        if item["type"] == "function_call":
            self._open = item

    def _close(self, status: str = "completed") -> None:
        item, self._open = self._open, None
        if item is None:
            return
        item["status"] = status
        if item["type"] == "function_call":
            self._event("response.function_call_arguments.done", item, arguments=item["arguments"],
                        name=item["name"])
        else:
            part = item["content"][0]
            done = "response.output_text.done" if item["type"] == "message" else "response.reasoning_text.done"
            extra = {"logprobs": []} if item["type"] == "message" else {}
            self._event(done, item, content_index=0, text=part["text"], **extra)
            self._event("response.content_part.done", item, content_index=0, part=dict(part))
        self._event("response.output_item.done", item, item=json.loads(json.dumps(item)))

    def _event(self, kind: str, of: dict, **fields) -> None:
        index = self.items.index(of)
        if kind.startswith("response.output_item."):
            self.events.append({"type": kind, "output_index": index, **fields})
        else:
            self.events.append({"type": kind, "item_id": of["id"], "output_index": index, **fields})

    def take(self) -> list[dict]:
        events, self.events = self.events, []
        return events


def feed(writer: OutputWriter, splitter: _Calls, piece: Piece) -> None:
    """One piece of the reply into the writer: reasoning, then content and calls as they were read."""
    writer.reasoning(piece.reasoning)
    text, calls = splitter.feed(piece)
    writer.text(text)
    for call in calls:
        writer.call(call)


class Sequence:
    """SSE bytes with a growing `sequence_number`, as OpenAI numbers a response's events."""

    def __init__(self) -> None:
        self.number = 0

    def sse(self, event: dict) -> bytes:
        event = {**event, "sequence_number": self.number}
        self.number += 1
        return f"event: {event['type']}\ndata: ".encode() + json_bytes(event) + b"\n\n"


async def events(reply: Reply, shape: Shape, response: Callable[..., dict],
                 done: Callable[[dict], None]) -> AsyncIterator[bytes]:
    """A streamed response: created, in_progress, each item's events, then completed (or incomplete).

    response(status, items, usage, complete) -> the response object; done(final) stores it."""
    seq = Sequence()
    writer = OutputWriter()
    splitter = _Calls(shape)
    try:
        yield seq.sse({"type": "response.created", "response": response("in_progress", [], None, True)})
        yield seq.sse({"type": "response.in_progress", "response": response("in_progress", [], None, True)})
        async for piece in reply.pieces():
            feed(writer, splitter, piece)
            if piece.finish_reason is not None:
                complete = piece.finish_reason != "length"
                writer.finish(complete)
                for event in writer.take():
                    yield seq.sse(event)
                final = response("completed" if complete else "incomplete", writer.items, piece.usage, complete)
                done(final)
                yield seq.sse({"type": f"response.{final['status']}", "response": final})
                return
            for event in writer.take():
                yield seq.sse(event)
    except APIError as e:  # headers are sent: the error travels as events, as OpenAI's servers do
        yield seq.sse({"type": "error", "code": e.code, "message": e.message, "param": None})
        failed = response("failed", writer.items, None, False)
        failed["error"] = {"code": e.code or "server_error", "message": e.message}
        yield seq.sse({"type": "response.failed", "response": failed})
    finally:
        reply.close()


def usage_json(usage: Optional[Usage]) -> Optional[dict]:
    if usage is None:
        return None
    return {"input_tokens": usage.prompt_tokens, "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.completion_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}
