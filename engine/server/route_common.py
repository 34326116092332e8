"""What every generation route shares (chat/completions, completions, Messages, Responses): the
session-id rules, and the watch that cancels a reply whose client hung up.

Below `app` and each API's module, so that none of them imports another for these.
"""

from __future__ import annotations

import asyncio
from typing import Optional

from fastapi import Request

from . import errors
from .pool import POOLED_PREFIX

MAX_SESSION_ID = 200  # as the body's session_id field


async def unless_gone(work, request: Request, reply):
    """Run `work` unless the client disconnects first; then cancel it (and the reply) and return None.

    A streamed reply learns of a hang-up when a write fails; a non-streamed one writes nothing until
    the end, so it listens for the disconnect message instead."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(disconnected(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()
        reply.close()
        return None
    finally:
        for pending in (task, gone):
            if not pending.done():
                pending.cancel()


async def disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def session_id(in_body: Optional[str], in_header: Optional[str]) -> Optional[str]:
    if in_body and in_header and in_body != in_header:
        raise errors.bad_request("session_id in the body and the X-Session-Id header differ")
    name = in_body or in_header or None
    if name is not None and len(name) > MAX_SESSION_ID:
        raise errors.bad_request(f"X-Session-Id is longer than {MAX_SESSION_ID} characters")
    if name is not None and name.startswith(POOLED_PREFIX):
        raise errors.bad_request(f"session ids starting with {POOLED_PREFIX!r} name the server's pooled "
                                 "sessions; choose another id")
    return name
