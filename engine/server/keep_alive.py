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

EVERY_S = 5.0
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""Headers of every event stream: no caching, and no buffering by a proxy in front (nginx)."""
BEAT = b": keep-alive\n\n"


async def keep_alive(source: AsyncIterator[bytes], every_s: Optional[float] = None,
                     beat: bytes = BEAT) -> AsyncIterator[bytes]:
    """`source`'s chunks, with `beat` whenever `every_s` (EVERY_S) pass without one. Closing this
    closes `source` (a client gone cancels the reply, as without the beats)."""
    every_s = every_s or EVERY_S
    chunks = source.__aiter__()
    waiting: Optional[asyncio.Future] = None
    try:
        while True:
            waiting = asyncio.ensure_future(chunks.__anext__())
            while not (await asyncio.wait({waiting}, timeout=every_s))[0]:
                yield beat
            try:
                chunk = waiting.result()
            except StopAsyncIteration:
                return
            waiting = None
            yield chunk
    finally:
        if waiting is not None and not waiting.done():
            waiting.cancel()  # into the source, which ends there (the reply is cancelled)
            await asyncio.wait({waiting})
        closing = getattr(chunks, "aclose", None)
        if closing is not None:
            await closing()
