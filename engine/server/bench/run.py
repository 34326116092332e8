"""`python -m engine serve --bench [--json]`: what serving over HTTP costs next to calling the engine
in-process, and what a warm session saves, on one loaded model in one run.

- aggregate tok/s of 8 clients streaming at once over HTTP vs the same 8 replies in-process;
- the same 8 conversations through the remote engine (engine.remote, the app's "Connect to server");
- p50 time to first token over HTTP minus in-process (a short prompt on a fresh session);
- time to first token of a second turn on a ~2,000-token conversation: warm (named session) vs cold;
- structured output: JSON-schema tok/s ÷ free tok/s at 1 and 8 clients, and time to a tool call's first
  chunk (bench/structured.py);
- the Responses API beside chat/completions, and a previous_response_id follow-up vs a stateless
  resend (bench/apis.py).

The server runs on a background thread of this process, the clients on an asyncio loop in the main
thread. Figures are printed, never asserted: the machine may be shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time

import httpx

from ... import Engine, EngineConfig, SamplingParams
from ...errors import EngineError
from ..app import ServerSettings
from ..generation import chat_prompt
from ..host import EngineHost
from ..runner import BackgroundServer

CLIENTS = 8
TOKENS = 32
TTFT_TRIALS = 5
LONG_TEXT = ("The river town kept its old stone bridge, its market on Thursdays and a bell that rang the hours. "
             "Travellers wrote about the bakery, the ferry and the library by the square. ")


def run_bench(args: argparse.Namespace) -> int:
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    config = EngineConfig(backend=args.backend, dtype=args.dtype, max_context=max(args.max_context, 4096),
                          max_sessions=args.max_sessions)
    try:
        engine = Engine.load(args.model, config)
    except EngineError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    inproc_warmup(engine, [{"role": "user", "content": "Hello"}])
    rss_off = rss_mib()
    host = EngineHost(engine)
    server = BackgroundServer(host, ServerSettings(), port=0).start()
    try:
        say(f"{engine.model.name} on {engine.backend}/{engine.device} ({engine.dtype}), server at {server.url}")
        httpx.post(f"{server.url}/chat/completions", timeout=600, json={
            "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4, "temperature": 0}).raise_for_status()
        rss_on = rss_mib()
        say(f"RSS with the model loaded: server off {rss_off:.0f} MiB, on {rss_on:.0f} MiB")
        figures = {**measure(engine, server, say), "rss_server_off_mib": round(rss_off, 1),
                   "rss_server_on_mib": round(rss_on, 1)}
    finally:
        server.stop()
        host.close()
        engine.close()
    if args.json:
        print(json.dumps(figures))
    else:
        print_table(figures)
    return 0


def measure(engine: Engine, server: BackgroundServer, say) -> dict:
    prompts = [f"Write a short story about traveller number {i}." for i in range(CLIENTS)]
    messages = [[{"role": "user", "content": p}] for p in prompts]
    inproc_warmup(engine, messages[0])
    inproc = inproc_aggregate(engine, messages)
    say(f"in-process, {CLIENTS} sessions: {inproc:.1f} tok/s")
    http = asyncio.run(http_aggregate(server.url, messages))
    say(f"HTTP, {CLIENTS} streaming clients: {http:.1f} tok/s")
    from ...remote.bench import remote_aggregate

    remote = remote_aggregate(server.url, engine.source, messages, TOKENS)
    say(f"remote engine, {CLIENTS} conversations: {remote:.1f} tok/s")
    ttft_in = statistics.median(inproc_ttft(engine, [{"role": "user", "content": f"Hi {i}"}]) for i in range(TTFT_TRIALS))
    ttft_http = statistics.median(asyncio.run(http_ttfts(server.url, TTFT_TRIALS)))
    say(f"p50 time to first token: in-process {ttft_in * 1000:.1f} ms, HTTP {ttft_http * 1000:.1f} ms")
    warm, cold, tokens = asyncio.run(warm_vs_cold(server.url, engine))
    say(f"second turn on a {tokens}-token conversation: warm {warm:.3f} s, cold {cold:.3f} s")
    from . import structured as bench_structured

    structured = asyncio.run(bench_structured.measure(server.url, _stream))
    for clients in (1, 8):
        structured[f"mask_share_{clients}"] = round(bench_structured.mask_share(engine, clients), 4)
    say(f"JSON schema / free tok/s: {structured['json_schema_vs_free_1']:.2f} (1 client), "
        f"{structured['json_schema_vs_free_8']:.2f} (8); grammar share of decode {structured['mask_share_1']:.2%} (1), "
        f"{structured['mask_share_8']:.2%} (8); tool call TTFT {structured['tool_call_ttft_ms']:.0f} ms")
    from . import apis as bench_apis
    from . import messages as bench_messages

    apis = asyncio.run(bench_messages.measure(server.url, messages, TOKENS, _stream))
    say(f"Messages / chat tok/s: {apis['messages_vs_chat']:.2f}; p50 TTFT Messages {apis['ttft_messages_ms']:.1f} ms, "
        f"chat {apis['ttft_chat_ms']:.1f} ms")
    apis.update(bench_apis.measure(server.url, engine, _stream, long_conversation(engine), say))
    return {**structured, **apis,
        "model": engine.source, "backend": engine.backend, "device": engine.device, "dtype": engine.dtype,
        "clients": CLIENTS, "tokens_per_client": TOKENS,
        "http_aggregate_tok_s": round(http, 2), "inproc_aggregate_tok_s": round(inproc, 2),
        "http_vs_inproc": round(http / inproc, 3) if inproc else None,
        "remote_aggregate_tok_s": round(remote, 2),
        "remote_vs_inproc": round(remote / inproc, 3) if inproc else None,
        "ttft_inproc_ms": round(ttft_in * 1000, 2), "ttft_http_ms": round(ttft_http * 1000, 2),
        "ttft_overhead_ms": round((ttft_http - ttft_in) * 1000, 2),
        "conversation_tokens": tokens, "ttft_warm_s": round(warm, 4), "ttft_cold_s": round(cold, 4),
        "warm_speedup": round(cold / warm, 2) if warm else None,
    }


def rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


# -- in-process --------------------------------------------------------------------------------------
def _params() -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=TOKENS, ignore_stop=True)


def inproc_warmup(engine: Engine, messages: list[dict]) -> None:
    with engine.open_session() as session:
        session.chat(messages, SamplingParams(temperature=0, max_tokens=4)).text()


def inproc_aggregate(engine: Engine, conversations: list[list[dict]]) -> float:
    sessions = [engine.open_session() for _ in conversations]
    counts = [0] * len(sessions)
    try:
        started = time.perf_counter()
        streams = [s.chat(m, _params()) for s, m in zip(sessions, conversations)]

        def drain(i: int) -> None:
            counts[i] = sum(len(chunk.token_ids) for chunk in streams[i])

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(streams))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - started)
    finally:
        for s in sessions:
            s.close()


def inproc_ttft(engine: Engine, messages: list[dict]) -> float:
    """Open a session and start a reply, as the server does for a new session id."""
    started = time.perf_counter()
    with engine.open_session() as session:
        stream = session.chat(messages, SamplingParams(temperature=0, max_tokens=2, ignore_stop=True))
        next(iter(stream))
        elapsed = time.perf_counter() - started
        stream.text()
    return elapsed


# -- over HTTP ---------------------------------------------------------------------------------------
async def _stream(client: httpx.AsyncClient, body: dict) -> tuple[float, int]:
    """(seconds to the first token, tokens) of one streamed chat reply."""
    started = time.perf_counter()
    first, tokens = None, 0
    async with client.stream("POST", "/chat/completions", json={**body, "stream": True,
                                                                 "stream_options": {"include_usage": True}}) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            elif first is None and chunk["choices"] and "role" not in chunk["choices"][0]["delta"]:
                first = time.perf_counter() - started
    return (first if first is not None else time.perf_counter() - started), tokens


async def http_aggregate(url: str, conversations: list[list[dict]]) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        body = {"temperature": 0, "max_tokens": TOKENS, "ignore_eos": True}
        started = time.perf_counter()
        results = await asyncio.gather(*(
            _stream(client, {**body, "messages": m, "session_id": f"bench-{i}"})
            for i, m in enumerate(conversations)))
        elapsed = time.perf_counter() - started
        for i in range(len(conversations)):
            await client.delete(f"/sessions/bench-{i}")
    return sum(tokens for _, tokens in results) / elapsed


async def http_ttfts(url: str, trials: int) -> list[float]:
    """Time to first token of a short prompt on a new named session, one client keeping its connection."""
    firsts = []
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        for trial in range(trials):
            session = f"ttft-{trial}"
            first, _ = await _stream(client, {"messages": [{"role": "user", "content": f"Hi {trial}"}],
                                              "temperature": 0, "max_tokens": 2, "ignore_eos": True,
                                              "session_id": session})
            await client.delete(f"/sessions/{session}")
            firsts.append(first)
    return firsts


def long_conversation(engine: Engine, target: int = 2000) -> list[dict]:
    """A conversation of at least `target` tokens (under the chat template) that ends with a user turn."""
    messages: list[dict] = []
    tail = [{"role": "user", "content": "Summarize the story so far."}]
    i = 0
    while len(chat_prompt(engine, messages + tail)) < target:
        messages += [{"role": "user", "content": f"Part {i}: " + LONG_TEXT * 3},
                     {"role": "assistant", "content": "Noted. " + LONG_TEXT * 3}]
        i += 1
    return messages + tail


async def warm_vs_cold(url: str, engine: Engine) -> tuple[float, float, int]:
    history = long_conversation(engine)
    body = {"temperature": 0, "max_tokens": 8}
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        first = await client.post("/chat/completions", json={**body, "messages": history, "session_id": "warm"})
        first.raise_for_status()
        second = history + [{"role": "assistant", "content": first.json()["choices"][0]["message"]["content"]},
                            {"role": "user", "content": "And what happens next?"}]
        warm, _ = await _stream(client, {**body, "messages": second, "session_id": "warm"})
        cold, _ = await _stream(client, {**body, "messages": second, "session_id": "cold"})
        for name in ("warm", "cold"):
            await client.delete(f"/sessions/{name}")
    return warm, cold, first.json()["usage"]["prompt_tokens"]


def print_table(f: dict) -> None:
    rows = [
        ("model", f"{f['model']} ({f['backend']}/{f['device']}, {f['dtype']})", ""),
        (f"aggregate tok/s, {f['clients']} streaming clients over HTTP", f"{f['http_aggregate_tok_s']:.1f}", ""),
        (f"aggregate tok/s, the same {f['clients']} sessions in-process", f"{f['inproc_aggregate_tok_s']:.1f}", ""),
        ("HTTP / in-process", f"{f['http_vs_inproc']:.2f}", "target >= 0.85"),
        (f"aggregate tok/s, the same {f['clients']} conversations through the remote engine",
         f"{f['remote_aggregate_tok_s']:.1f}", ""),
        ("remote engine / in-process", f"{f['remote_vs_inproc']:.2f}", "target >= 0.8"),
        ("p50 time to first token, in-process / HTTP (ms)", f"{f['ttft_inproc_ms']:.1f} / {f['ttft_http_ms']:.1f}", ""),
        ("time to first token overhead of HTTP (ms)", f"{f['ttft_overhead_ms']:.1f}", "target <= 20"),
        (f"2nd turn TTFT on a {f['conversation_tokens']}-token conversation, warm / cold (s)",
         f"{f['ttft_warm_s']:.3f} / {f['ttft_cold_s']:.3f}", ""),
        ("warm speedup (cold / warm)", f"{f['warm_speedup']:.1f}x", "target >= 5x"),
        ("JSON-schema / free tok/s, 1 client", f"{f['json_schema_vs_free_1']:.2f}", "target >= 0.9"),
        ("JSON-schema / free tok/s, 8 clients", f"{f['json_schema_vs_free_8']:.2f}", "target >= 0.9"),
        ("share of decode time in the grammar, in-process, 1 / 8 sessions",
         f"{f['mask_share_1']:.2%} / {f['mask_share_8']:.2%}", "<= 10%"),
        ("time to a tool call's first chunk (ms)", f"{f['tool_call_ttft_ms']:.0f}", ""),
        ("Anthropic Messages / chat tok/s, 8 streaming clients", f"{f['messages_vs_chat']:.2f}", "target >= 0.95"),
        ("p50 time to first token, Messages / chat (ms)", f"{f['ttft_messages_ms']:.1f} / {f['ttft_chat_ms']:.1f}", ""),
        ("process RSS, model loaded: server off / on (MiB)",
         f"{f['rss_server_off_mib']:.0f} / {f['rss_server_on_mib']:.0f}", ""),
    ]
    from . import apis as bench_apis

    rows += bench_apis.rows(f)
    width = max(len(r[0]) for r in rows)
    print(f"| {'figure'.ljust(width)} | value | target |")
    print(f"|{'-' * (width + 2)}|-------|--------|")
    for name, value, target in rows:
        print(f"| {name.ljust(width)} | {value} | {target} |")
