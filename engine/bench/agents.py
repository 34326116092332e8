"""`python -m engine bench --agents --json`: agent sessions that share one long system prompt.

Each of N sessions gets the same system prompt and tool list (PREFIX tokens) and a task of its own
(TASK tokens), one after another, as sub-agents start. Measured on llama.cpp with prefix sharing on
(engine/prefix_share.py) and off, in the same run:

- `pool_ratio`: tokens the pool holds after all N ÷ (one prefix + the N tasks and replies): 1.0 is
  every prefix held once; without sharing it is about N.
- `warm_ttft_ratio`: the median time to first token of sessions 2..N ÷ session 1's.
- `identical`: every reply's tokens the same with sharing and without (greedy).
- `restart_ttft_ratio`: after a restart on the same prompt cache folder (engine/prefix_cache/), the
  time to first token of a new task behind the same prefix ÷ that of the first engine, which computed
  its whole prompt; `restart_identical`: that reply's tokens are those of an engine without the cache.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Callable, Optional

from ..engine import Engine
from ..models.estimate import estimate_memory
from ..types import EngineConfig, SamplingParams

REPLY = SamplingParams(temperature=0, max_tokens=96, ignore_stop=True)
"""Long enough that the first sessions still write while the last ones start: agents run at once, and
an idle session's cells may be parked out of the pool (engine/kv_room.py), which would hide the count."""
TOOLS = ("Tools: read_file(path) returns a file's text; write_file(path, text) replaces it; run(command) runs a "
         "shell command and returns its output; search(query) finds files by content. ")
RULES = ("You are a careful coding agent working in a Python repository. Explain your plan, then call one tool "
         "at a time, read what it returns, and report what changed. Never invent a file's content. ")


def agents_figures(model: str, say: Callable[..., None], sessions: int = 8, prefix_tokens: int = 3000,
                   task_tokens: int = 200) -> dict:
    runs = {}
    for share in (True, False):
        say(f"{sessions} agent sessions, prefix sharing {'on' if share else 'off'}…")
        runs[share] = _run(model, share, sessions, prefix_tokens, task_tokens)
    on, off = runs[True], runs[False]
    say("a restart on the same prompt cache…")
    restart = _restart(model, sessions, prefix_tokens, task_tokens)
    useful = on["prefix"] + sum(on["own"])
    return {
        "model": model, "sessions": sessions, "prefix_tokens": on["prefix"], "task_tokens": task_tokens,
        "pool_ratio": round(on["held"] / useful, 3),
        "pool_ratio_without_sharing": round(off["held"] / useful, 3),
        "warm_ttft_ratio": round(statistics.median(on["ttft"][1:]) / on["ttft"][0], 3),
        "warm_ttft_ratio_without_sharing": round(statistics.median(off["ttft"][1:]) / off["ttft"][0], 3),
        "ttft_s": [round(t, 3) for t in on["ttft"]],
        "ttft_s_without_sharing": [round(t, 3) for t in off["ttft"]],
        "identical": on["replies"] == off["replies"],
        "restart_ttft_ratio": round(restart["ttft"][1] / restart["ttft"][0], 3),
        "restart_ttft_s": [round(t, 3) for t in restart["ttft"]],
        "restart_prefilled_tokens": restart["prefilled"],
        "restart_identical": restart["reply"] == off["replies"][1],
    }


def _load(model: str, share: bool, sessions: int, context: int, cache: Optional[str] = None) -> Engine:
    # A pool that holds every session whole without sharing: none is parked, so "held" compares the two.
    room = sessions * estimate_memory(model, max_context=context, dtype="float16").bytes_per_session * 11 // 10
    return Engine.load(model, EngineConfig(backend="llamacpp", max_context=context, max_sessions=sessions,
                                           memory_budget=room, share_prefixes=share, speculative=False,
                                           prefix_cache_dir=cache))


def _run(model: str, share: bool, sessions: int, prefix_tokens: int, task_tokens: int) -> dict:
    engine = _load(model, share, sessions, prefix_tokens + task_tokens + REPLY.max_tokens + 16)
    try:
        prefix = _tokens(engine, RULES + TOOLS, prefix_tokens)
        opened = [engine.open_session() for _ in range(sessions)]
        ttft, streams = [], []
        for i, session in enumerate(opened):
            task = _task(engine, i, task_tokens)
            began = time.perf_counter()
            stream = iter(session.generate(prefix + task, REPLY))
            first = _first(stream)  # the reply's first token: the prefix is held (computed or shared)
            ttft.append(time.perf_counter() - began)
            streams.append((task, first, stream))
        held = engine.capacity().held_tokens  # every session still writing: none parked
        replies = [[t for c in first for t in c.token_ids] + [t for c in stream for t in c.token_ids]
                   for _, first, stream in streams]
        own = [len(task) + len(reply) for (task, _, _), reply in zip(streams, replies)]
        for session in opened:
            session.close()
        return {"prefix": len(prefix), "ttft": ttft, "replies": replies, "own": own, "held": held}
    finally:
        engine.close()


def _restart(model: str, sessions: int, prefix_tokens: int, task_tokens: int) -> dict:
    """Task 1 on an engine with an empty prompt cache, then task 2 (the same prefix) on a new engine on
    the same folder: their times to first token, what the second computed, and its reply."""
    context = prefix_tokens + task_tokens + REPLY.max_tokens + 16
    ttft, prefilled, reply = [], 0, []
    with tempfile.TemporaryDirectory(prefix="confab-bench-prefix-cache-") as folder:
        for i in range(2):
            engine = _load(model, True, sessions, context, folder)
            try:
                prompt = _tokens(engine, RULES + TOOLS, prefix_tokens) + _task(engine, i, task_tokens)
                session = engine.open_session()
                began = time.perf_counter()
                stream = iter(session.generate(prompt, REPLY))
                first = _first(stream)
                ttft.append(time.perf_counter() - began)
                chunks = first + list(stream)
                prefilled, reply = chunks[-1].stats.prefilled_tokens, [t for c in chunks for t in c.token_ids]
            finally:
                engine.close()
    return {"ttft": ttft, "prefilled": prefilled, "reply": reply}


def _first(stream) -> list:
    """The chunks up to the reply's first token (or its end)."""
    first = [next(stream)]
    while not first[-1].token_ids and first[-1].finish_reason is None:
        first.append(next(stream))
    return first


def _task(engine: Engine, i: int, n: int) -> list[int]:
    return _tokens(engine, f"Task {i + 1}: fix issue #{100 + i} in module_{i}.py and add a test. ", n)


def _tokens(engine: Engine, text: str, n: int) -> list[int]:
    """`n` tokens of `text` repeated (the engine's own tokenizer)."""
    ids = engine.tokenizer(text, add_special_tokens=False).input_ids
    return (ids * (n // len(ids) + 1))[:n]
