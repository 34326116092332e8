"""Stored responses (`store: true`), per API key: what GET /v1/responses/{id} shows, and what a
`previous_response_id` continues.

A stored response is a named session, like a client's `session_id`: its conversation items (input
and output) and the name of the engine session that holds them. A follow-up renders the whole
conversation again, and the session prefills only what is new; if that session was freed meanwhile
(evicted to make room, or a model switch), the same name gets a fresh session that reads it all.
Another key's id is answered exactly like an unknown one (404), so ids leak nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

from ..errors import not_found

SESSION_PREFIX = "response:"
"""Names of the pool sessions stored responses continue on."""

DEFAULT_LIMIT = 1000
"""Stored responses kept (oldest forgotten first); each is text, so this is a few MB at most."""


@dataclass(frozen=True)
class Stored:
    id: str
    owner: Optional[str]
    session: str
    """The pool's session name for this conversation (shared along a chain of follow-ups)."""
    items: tuple[dict, ...]
    """The conversation: every input item so far and this response's output items."""
    body: dict
    """The response object as it was returned."""


class ResponseStore:
    """Stored responses of one server, at most `limit`, forgetting the least recently used."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._lock = threading.Lock()
        self._limit = limit
        self._items: "OrderedDict[tuple[Optional[str], str], Stored]" = OrderedDict()

    def put(self, stored: Stored) -> None:
        with self._lock:
            self._items[(stored.owner, stored.id)] = stored
            while len(self._items) > self._limit:
                self._items.popitem(last=False)

    def get(self, owner: Optional[str], response_id: str) -> Stored:
        """The stored response, or 404 (OpenAI's shape) for an unknown id or another key's."""
        with self._lock:
            stored = self._items.get((owner, response_id))
            if stored is not None:
                self._items.move_to_end((owner, response_id))
        if stored is None:
            raise not_found(f"no stored response {response_id!r} (only responses created with store: true "
                            "by this API key can be read or continued)", "response_not_found")
        return stored

    def delete(self, owner: Optional[str], response_id: str) -> Stored:
        with self._lock:
            stored = self._items.pop((owner, response_id), None)
        if stored is None:
            raise not_found(f"no stored response {response_id!r}", "response_not_found")
        return stored

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
