"""The Responses API in `python -m engine serve --bench`: what its translation costs beside
chat/completions, and what `previous_response_id` saves against resending the history.

- aggregate tok/s of 8 clients streaming the same prompts through /v1/responses and through
  /v1/chat/completions (greedy, so both generate the same tokens), alternated, best of `ROUNDS`;
- time to first token of a follow-up on a ~2,000-token conversation: `previous_response_id` (the
  stored response's session) vs a stateless resend of the same history (which the pool may still
  match by prefix, as it does for chat/completions clients), with the cached tokens of each.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Awaitable, Callable

import httpx

from ... import Engine

CLIENTS = 8
TOKENS = 32
ROUNDS = 2


async def _responses_stream(client: httpx.AsyncClient, body: dict) -> tuple[float, dict]:
    """(seconds to the first text, the final response) of one streamed Response."""
    started = time.perf_counter()
    first, final = None, {}
    async with client.stream("POST", "/responses", json={**body, "stream": True}) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if first is None and event["type"] == "response.output_text.delta":
                first = time.perf_counter() - started
            if event["type"] in ("response.completed", "response.incomplete"):
                final = event["response"]
    return (first if first is not None else time.perf_counter() - started), final


async def _aggregate(url: str, prompts: list[str], one: Callable[..., Awaitable[int]]) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        started = time.perf_counter()
        tokens = await asyncio.gather(*(one(client, p) for p in prompts))
        return sum(tokens) / (time.perf_counter() - started)


async def overhead(url: str, stream_chat) -> tuple[float, float]:
    """(Responses tok/s, chat/completions tok/s), 8 clients at once, best of ROUNDS each."""
    prompts = [f"Write a short story about traveller number {i}." for i in range(CLIENTS)]

    async def via_responses(client, prompt) -> int:
        _, final = await _responses_stream(client, {"input": prompt, "temperature": 0, "max_output_tokens": TOKENS})
        return final["usage"]["output_tokens"]

    async def via_chat(client, prompt) -> int:
        _, tokens = await stream_chat(client, {"messages": [{"role": "user", "content": prompt}],
                                               "temperature": 0, "max_tokens": TOKENS})
        return tokens

    best_r, best_c = 0.0, 0.0
    for _ in range(ROUNDS):
        best_c = max(best_c, await _aggregate(url, prompts, via_chat))
        best_r = max(best_r, await _aggregate(url, prompts, via_responses))
    return best_r, best_c


async def follow_up(url: str, history: list[dict]) -> dict:
    """TTFT of the next turn: previous_response_id vs the whole history resent without state."""
    body = {"temperature": 0, "max_output_tokens": 8}
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        first = (await client.post("/responses", json={**body, "input": history, "store": True})).json()
        stateless = (await client.post("/responses", json={**body, "input": history})).json()
        ask = [{"role": "user", "content": "And what happens next?"}]
        chained_ttft, chained = await _responses_stream(
            client, {**body, "input": ask, "previous_response_id": first["id"], "store": True})
        resend = history + [{"role": "assistant", "content": _text(stateless)}] + ask
        resend_ttft, resent = await _responses_stream(client, {**body, "input": resend})
        await client.delete(f"/responses/{first['id']}")
    return {
        "responses_history_tokens": first["usage"]["input_tokens"],
        "responses_chained_ttft_s": round(chained_ttft, 4),
        "responses_chained_cached": chained["usage"]["input_tokens_details"]["cached_tokens"],
        "responses_resend_ttft_s": round(resend_ttft, 4),
        "responses_resend_cached": resent["usage"]["input_tokens_details"]["cached_tokens"],
    }


def _text(response: dict) -> str:
    return "".join(part["text"] for item in response["output"] if item["type"] == "message"
                   for part in item["content"])


def measure(url: str, engine: Engine, stream_chat, history: list[dict], say) -> dict:
    responses, chat = asyncio.run(overhead(url, stream_chat))
    say(f"Responses vs chat/completions, {CLIENTS} streaming clients: {responses:.1f} vs {chat:.1f} tok/s")
    chained = asyncio.run(follow_up(url, history))
    say(f"follow-up on a {chained['responses_history_tokens']}-token conversation: previous_response_id "
        f"{chained['responses_chained_ttft_s']:.3f} s, stateless resend {chained['responses_resend_ttft_s']:.3f} s")
    return {"responses_aggregate_tok_s": round(responses, 2), "chat_aggregate_tok_s": round(chat, 2),
            "responses_vs_chat": round(responses / chat, 3) if chat else None, **chained}


def rows(f: dict) -> list[tuple[str, str, str]]:
    """The bench table's Responses rows."""
    return [
        (f"aggregate tok/s, {CLIENTS} streaming clients, Responses / chat/completions",
         f"{f['responses_aggregate_tok_s']:.1f} / {f['chat_aggregate_tok_s']:.1f}", ""),
        ("Responses / chat/completions", f"{f['responses_vs_chat']:.2f}", "target >= 0.95"),
        (f"next-turn TTFT on a {f['responses_history_tokens']}-token conversation, previous_response_id / "
         "stateless resend (s)", f"{f['responses_chained_ttft_s']:.3f} / {f['responses_resend_ttft_s']:.3f}", ""),
        ("cached tokens of that turn, previous_response_id / stateless resend",
         f"{f['responses_chained_cached']} / {f['responses_resend_cached']}", ""),
    ]
