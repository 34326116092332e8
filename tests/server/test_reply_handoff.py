"""A server reply reads its chunks from the engine thread's hand-off (no thread per reply): every chunk
in order, and an error instead of a wait for ever if the engine thread dies without ending it."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from engine.chunk_queue import ChunkQueue
from engine.handle import Failed
from engine.session import Stream
from engine.types import Chunk
from engine.server import generation
from engine.server.errors import APIError


class Pool:
    def __init__(self) -> None:
        self.released = []

    def release(self, lease, discard: bool = False) -> None:
        self.released.append(discard)


def _reply(alive=lambda: True):
    out, pool = ChunkQueue(), Pool()
    lease = SimpleNamespace(session=SimpleNamespace(cancel=lambda: None), cut=None)
    return out, pool, generation.Reply(pool, lease, Stream(out, threading.Event(), alive), [], 3)


async def _read(reply) -> list[str]:
    return [piece.text async for piece in reply.pieces()]


def test_chunks_made_before_and_after_the_reply_listens_all_arrive_in_order():
    async def main():
        out = ChunkQueue()
        out.put(Chunk("a", (1,)))  # made before the server's Reply listens
        pool = Pool()
        lease = SimpleNamespace(session=SimpleNamespace(cancel=lambda: None), cut=None)
        reply = generation.Reply(pool, lease, Stream(out, threading.Event()), [], 3)
        threading.Thread(target=lambda: [out.put(Chunk(t, (2,))) for t in "bcd"]
                         + [out.put(Chunk("e", (3,), "stop"))]).start()
        return await _read(reply), pool.released

    texts, released = asyncio.run(main())
    assert "".join(texts) == "abcde" and released == [False]


def test_a_failed_forward_ends_the_reply_with_an_error_and_discards_the_session():
    async def main():
        out, pool, reply = _reply()
        out.put(Chunk("a", (1,)))
        out.put(Failed(RuntimeError("boom")))
        with pytest.raises(APIError, match="boom"):
            await _read(reply)
        return pool.released

    assert asyncio.run(main()) == [True]


def test_a_reply_whose_engine_thread_died_ends_with_an_error(monkeypatch):
    monkeypatch.setattr(generation, "ENGINE_WATCH_S", 0.01)
    alive = [True]

    async def main():
        out, _, reply = _reply(lambda: alive[0])
        out.put(Chunk("a", (1,)))
        alive[0] = False  # gone without a last chunk
        with pytest.raises(APIError, match="engine stopped before this reply finished"):
            await asyncio.wait_for(_read(reply), 10)

    asyncio.run(main())
