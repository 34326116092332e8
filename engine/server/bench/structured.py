"""The structured-output figures of `python -m engine serve --bench`: what the grammar's per-token
mask costs, and how soon a tool call arrives.

- `json_schema_vs_free_{1,8}`: aggregate tok/s of streamed replies under a JSON schema ÷ the same
  number of free-text replies, with 1 and 8 clients at once. The schema cannot be completed within
  the token budget, so both kinds generate exactly the same number of tokens and the ratio is the
  mask's cost alone (target ≥ 0.9). Each kind runs twice, interleaved, and keeps its best run.
- `mask_share_{1,8}`: in-process, the share of the wall time of 1 or 8 constrained replies that the
  engine thread spent in the grammar (mask and advance, `GenerationStats.constraint_s`): the cost
  the ratios above measure, without the noise of a shared machine (1 - share is the ratio it implies).
- `tool_call_ttft_ms`: time from the request to the first `delta.tool_calls` chunk (the call's id and
  name) of a streamed reply with tool_choice "required", on a new session: the prompt with the tools
  is prefilled, then the call's opening up to its name is generated.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time

import httpx

from ... import Constraint, Engine, SamplingParams

TOKENS = 48
TRIALS = 3
LONG_SCHEMA = {
    "type": "object",
    "properties": {"notes": {"type": "array", "items": {"type": "string"}, "minItems": 1000}},
    "required": ["notes"],
}
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "notes", "strict": True, "schema": LONG_SCHEMA}}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24},
                                                    "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"]}}}


async def _run(client: httpx.AsyncClient, clients: int, extra: dict, stream) -> float:
    body = {"temperature": 0, "max_tokens": TOKENS, "ignore_eos": True, **extra}
    started = time.perf_counter()
    results = await asyncio.gather(*(
        stream(client, {**body, "messages": [{"role": "user", "content": f"Take notes on topic {i}."}],
                        "session_id": f"structured-{i}"}) for i in range(clients)))
    elapsed = time.perf_counter() - started
    for i in range(clients):
        await client.delete(f"/sessions/structured-{i}")
    return sum(tokens for _, tokens in results) / elapsed


def mask_share(engine: Engine, clients: int) -> float:
    """Engine-thread seconds in the grammar ÷ wall seconds, for `clients` constrained replies at once."""
    params = SamplingParams(temperature=0, max_tokens=TOKENS, ignore_stop=True,
                            constraint=Constraint.json_schema(LONG_SCHEMA, strict=True))
    sessions = [engine.open_session() for _ in range(clients)]
    stats: list = [None] * clients
    try:
        started = time.perf_counter()
        streams = [s.chat([{"role": "user", "content": f"Take notes on topic {i}."}], params)
                   for i, s in enumerate(sessions)]

        def drain(i: int) -> None:
            stats[i] = list(streams[i])[-1].stats

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
    finally:
        for s in sessions:
            s.close()
    return sum(s.constraint_s for s in stats) / elapsed


async def measure(url: str, stream) -> dict:
    """`stream(client, body) -> (seconds to first token, tokens)` is the server bench's own client."""
    figures: dict = {}
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        await _run(client, 1, {"response_format": SCHEMA_FORMAT}, stream)  # first use builds the vocabulary
        for clients in (1, 8):
            free, constrained = [], []
            for _ in range(2):
                free.append(await _run(client, clients, {}, stream))
                constrained.append(await _run(client, clients, {"response_format": SCHEMA_FORMAT}, stream))
            figures[f"free_tok_s_{clients}"] = round(max(free), 2)
            figures[f"json_schema_tok_s_{clients}"] = round(max(constrained), 2)
            figures[f"json_schema_vs_free_{clients}"] = round(max(constrained) / max(free), 3)
        firsts = []
        for trial in range(TRIALS):
            body = {"messages": [{"role": "user", "content": f"What is the weather in city {trial}?"}],
                    "tools": [WEATHER], "tool_choice": "required", "temperature": 0, "max_tokens": 96,
                    "session_id": f"tool-{trial}"}
            first, _ = await stream(client, body)
            await client.delete(f"/sessions/tool-{trial}")
            firsts.append(first)
        figures["tool_call_ttft_ms"] = round(statistics.median(firsts) * 1000, 2)
    return figures
