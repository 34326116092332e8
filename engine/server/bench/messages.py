"""What Anthropic Messages costs beside chat/completions (part of `python -m engine serve --bench`).

The same 8 conversations stream through `/v1/chat/completions` and `/v1/messages` on fresh named
sessions, in rounds that swap which goes first (the one after a round of deletes may meet the pool's
clean-up), best of `ROUNDS` each as the Responses figure takes it; then the p50 time to the
first token of a short prompt on a new session through each. Both run the same engine path, so the
ratio is the translation's and the event stream's cost (target: ≥ 0.95, i.e. ≤ 5 % overhead).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import httpx

ROUNDS = 3
TTFT_TRIALS = 5


async def messages_stream(client: httpx.AsyncClient, body: dict) -> tuple[float, int]:
    """(seconds to the first content delta, output tokens) of one streamed Messages reply; the body's
    session_id goes in the X-Session-Id header, as Messages clients send it."""
    body = dict(body)
    headers = {"x-session-id": body.pop("session_id")}
    started = time.perf_counter()
    first, tokens = None, 0
    async with client.stream("POST", "/messages", json={**body, "stream": True}, headers=headers) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "content_block_delta" and first is None:
                first = time.perf_counter() - started
            elif event["type"] == "message_delta":
                tokens = event["usage"]["output_tokens"]
    return (first if first is not None else time.perf_counter() - started), tokens


async def _aggregate(client: httpx.AsyncClient, stream, conversations: list[list[dict]], tokens: int,
                     tag: str) -> float:
    body = {"temperature": 0, "max_tokens": tokens, "ignore_eos": True}
    started = time.perf_counter()
    results = await asyncio.gather(*(stream(client, {**body, "messages": m, "session_id": f"{tag}-{i}"})
                                     for i, m in enumerate(conversations)))
    elapsed = time.perf_counter() - started
    for i in range(len(conversations)):
        await client.delete(f"/sessions/{tag}-{i}")
    return sum(n for _, n in results) / elapsed


async def measure(url: str, conversations: list[list[dict]], tokens: int, chat_stream) -> dict:
    """Aggregate tok/s and p50 TTFT through Messages and chat; `chat_stream` is the chat bench's own."""
    chat_rates, message_rates, chat_ttft, message_ttft = [], [], [], []
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        for r in range(ROUNDS):
            pair = [(chat_stream, chat_rates, f"bench-chat-{r}"), (messages_stream, message_rates, f"bench-msg-{r}")]
            for stream, rates, tag in pair if r % 2 == 0 else pair[::-1]:
                rates.append(await _aggregate(client, stream, conversations, tokens, tag))
        for trial in range(TTFT_TRIALS):
            short = {"messages": [{"role": "user", "content": f"Hi {trial}"}], "temperature": 0, "max_tokens": 2,
                     "ignore_eos": True}
            for stream, times, name in ((chat_stream, chat_ttft, f"ttft-chat-{trial}"),
                                        (messages_stream, message_ttft, f"ttft-msg-{trial}")):
                times.append((await stream(client, {**short, "session_id": name}))[0])
                await client.delete(f"/sessions/{name}")
    chat, msgs = max(chat_rates), max(message_rates)
    return {"messages_aggregate_tok_s": round(msgs, 2), "chat_aggregate_tok_s": round(chat, 2),
            "messages_vs_chat": round(msgs / chat, 3) if chat else None,
            "ttft_messages_ms": round(statistics.median(message_ttft) * 1000, 2),
            "ttft_chat_ms": round(statistics.median(chat_ttft) * 1000, 2)}
