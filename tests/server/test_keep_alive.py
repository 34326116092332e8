"""Streams stay alive while they have nothing to say (a long prompt read, a turn waiting for room):
an SSE comment at most every few seconds, which clients skip."""

from __future__ import annotations

import asyncio

from engine.server import keep_alive as beats
from tests.server.helpers import client, http


async def _collect(wrapped, release: asyncio.Event, after_beats: int) -> list[bytes]:
    out = []
    async for chunk in wrapped:
        out.append(chunk)
        if out.count(beats.BEAT) == after_beats:
            release.set()
    return out


def test_a_quiet_stream_gets_a_beat_until_its_next_chunk():
    async def run():
        release = asyncio.Event()

        async def source():
            yield b"data: first\n\n"
            await release.wait()  # a prompt being read: nothing to send
            yield b"data: last\n\n"

        return await _collect(beats.keep_alive(source(), every_s=0.01), release, after_beats=3)

    out = asyncio.run(run())
    assert out[0] == b"data: first\n\n" and out[-1] == b"data: last\n\n"
    assert out[1:-1] == [beats.BEAT] * 3


def test_closing_the_stream_closes_its_source_while_it_waits():
    closed = []

    async def run():
        async def source():
            try:
                yield b"data: first\n\n"
                await asyncio.Event().wait()
            finally:
                closed.append(True)  # the reply is cancelled here in the server

        wrapped = beats.keep_alive(source(), every_s=0.01)
        assert await wrapped.__anext__() == b"data: first\n\n"
        assert await wrapped.__anext__() == beats.BEAT
        await wrapped.aclose()  # the client went away

    asyncio.run(run())
    assert closed == [True]


def test_clients_read_a_stream_full_of_beats_as_without(serve, tiny_engine, monkeypatch):
    server = serve(tiny_engine)
    asked = dict(model=tiny_engine.source, messages=[{"role": "user", "content": "Hi"}], temperature=0, max_tokens=8)
    whole = client(server).chat.completions.create(**asked).choices[0].message.content
    monkeypatch.setattr(beats, "EVERY_S", 1e-6)  # a beat between (nearly) every two chunks
    with http(server).stream("POST", "/v1/chat/completions", json={**asked, "stream": True}) as raw:
        assert b": keep-alive" in b"".join(raw.iter_raw())
    streamed = client(server).chat.completions.create(**asked, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == whole
    events = client(server).responses.create(model=tiny_engine.source, input="Hi", max_output_tokens=8,
                                             temperature=0, stream=True)
    assert [e.type for e in events][-1] == "response.incomplete"  # cut by max_output_tokens, read whole
