"""An SSE comment every few seconds while a stream has nothing to say, so clients and proxies with
idle timeouts keep the connection while a long prompt is read or a turn waits for room.

Why: chat/completions and Responses streams sent nothing for 52-58 s while a 2,500-token prompt was
read, and 411 s for a turn waiting under pool pressure; clients with idle timeouts dropped them.
SSE comment lines (starting with ':') are ignored by every SSE client (the openai SDK's decoder
skips them). Anthropic Messages beats with its own `ping` event (anthropic_stream.py).
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Optional

from ..handle import Failed

EVERY_S = 5.0
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""Headers of every event stream: no caching, and no buffering by a proxy in front (nginx)."""
BEAT = b": keep-alive\n\n"


_END = object()
_BEAT = object()


async def keep_alive(source: AsyncIterator[bytes], every_s: Optional[float] = None,
                     beat: bytes = BEAT) -> AsyncIterator[bytes]:
    """`source`'s chunks, with `beat` whenever `every_s` (EVERY_S) pass without one. Closing this
    closes `source` (a client gone cancels the reply, as without the beats).

    One task per stream reads `source`, and a timer, moved on at every chunk, puts a beat in its
    place: before, a task and an `asyncio.wait` per chunk cost the event loop about as much as the
    chunk itself, on the two cores the model computes on."""
    every_s = every_s or EVERY_S
    loop = asyncio.get_running_loop()
    ready: asyncio.Queue = asyncio.Queue()

    async def read() -> None:
        try:
            async for chunk in source:
                ready.put_nowait(chunk)
        except Exception as e:  # the consumer raises it, as it would have read it
            ready.put_nowait(Failed(e))
        ready.put_nowait(_END)

    reader = asyncio.ensure_future(read())
    timer = loop.call_later(every_s, ready.put_nowait, _BEAT)
    try:
        while True:
            item = await ready.get()
            timer.cancel()
            if item is _END:
                return
            if isinstance(item, Failed):
                raise item.error
            yield beat if item is _BEAT else item
            timer = loop.call_later(every_s, ready.put_nowait, _BEAT)
    finally:
        timer.cancel()
        if not reader.done():
            reader.cancel()  # into the source, which ends there (the reply is cancelled)
            await asyncio.wait({reader})
        closing = getattr(source, "aclose", None)
        if closing is not None:
            await closing()
