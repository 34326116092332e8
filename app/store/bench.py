"""Benchmark of what the store and saved states buy: `python -m app.store.bench [--json] [--backend torch|mlx]`.

Two figures, in one run, in a throwaway data folder (a temporary `CONFAB_HOME`; the user's data is
never touched):

1. Time to first token of the next reply in a ~2,000-token conversation after a restart of the
   engine, resumed from its saved state vs re-prefilled from the text. Two identical conversations
   are prefilled in a first engine; one is suspended (state saved), the other's state is deleted;
   the engine is closed and a fresh one loaded ("restart"). Both are then asked the same question.
   `ttft_*_s` is wall time from `manager.reply()` to the first token, so restoring the file counts;
   `engine_ttft_*_s` is the engine's own figure (request to first token, excluding the restore).
2. Listing and searching 1,000 conversations of 100 messages each (median of repeated calls): a
   common query that every message matches (the worst case: FTS ranks all 100,000 rows for the
   top 50) and a rare one (one message in 1,000). Also the time to open that store again
   (`open_store`: integrity check, FTS5 index check, recovery), which runs at every start.
   The rows are built by bulk inserts: `insert_all` on `conversations` and `messages` inside one
   `db.atomic()` transaction per table, with the FTS triggers indexing as rows go in — the same
   tables and indexes the app writes one message at a time, at a fraction of the cost.

Default model: the bundled SmolLM2-135M-Instruct, max_context 4096, the backend's default dtype.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from engine import DEFAULT_MODEL, Engine, EngineConfig, SamplingParams

from .db import open_store
from .store import Store

WORDS = ("river mountain lantern orchard compass harbor meadow glacier canyon ember willow "
         "quartz falcon thistle beacon cedar marble sparrow tundra violet").split()
NEXT_QUESTION = "Given all of that, which place should we visit first, and why?"


def _filler(n_words: int, seed: int) -> str:
    """Deterministic prose-like text (no randomness: both conversations must be identical)."""
    out = [WORDS[(seed * 7 + i * 13 + (i // 5)) % len(WORDS)] for i in range(n_words)]
    return " ".join(out).capitalize() + "."


def _long_conversation(store: Store, title: str, target_tokens: int, count_tokens: Callable[[str], int]) -> int:
    """A conversation of alternating user/assistant messages of about `target_tokens` tokens."""
    c = store.create_conversation(title, system_prompt="You are a concise travel planner.")
    total, turn = 0, 0
    while total < target_tokens:
        role = "user" if turn % 2 == 0 else "assistant"
        text = _filler(120, turn)
        store.append_message(c.id, role, text)
        total += count_tokens(text) + 5
        turn += 1
    if role == "user":  # end on an assistant turn so the next question follows naturally
        store.append_message(c.id, "assistant", _filler(40, turn))
    return c.id


def _first_token(manager, cid: int, params: SamplingParams) -> tuple[float, float, int]:
    """(wall seconds to first token, engine's ttft, prompt tokens) of one reply."""
    started = time.perf_counter()
    first = None
    last = None
    for chunk in manager.reply(cid, NEXT_QUESTION, params):
        if first is None and chunk.token_ids:
            first = time.perf_counter() - started
        last = chunk
    return first, last.stats.ttft_s, last.stats.prompt_tokens


def bench_restore(backend: str, model: str, dtype: str) -> dict:
    """TTFT after a restart: restored from saved state vs re-prefilled from text."""
    from app.conversations import ConversationManager

    config = EngineConfig(backend=backend, dtype=dtype, max_context=4096, max_sessions=4)
    params = SamplingParams(temperature=0, max_tokens=4)
    store = open_store().store
    with Engine.load(model, config) as engine:
        count = lambda text: len(engine.tokenizer(text, add_special_tokens=False).input_ids)  # noqa: E731
        restored_id = _long_conversation(store, "restored", 2000, count)
        reprefill_id = _long_conversation(store, "re-prefilled", 2000, count)
        manager = ConversationManager(engine, store)
        for cid in (restored_id, reprefill_id):  # prefill both once, as a previous app run would
            with manager.session_for(cid).chat(_messages(store, cid), SamplingParams(temperature=0, max_tokens=1)) as s:
                list(s)
        manager.close()  # suspends both: their states are saved
        for state in store.states.for_conversation(reprefill_id):
            store.states.delete(state.id)  # this one has no saved state: it must re-prefill
        state_bytes = store.states.total_bytes()

    with Engine.load(model, config) as engine:  # the "restart"
        with engine.open_session() as warm:  # first-forward warm-up, not counted for either
            list(warm.generate([1, 2, 3], SamplingParams(temperature=0, max_tokens=2)))
        manager = ConversationManager(engine, store)
        ttft_restored, engine_restored, prompt_tokens = _first_token(manager, restored_id, params)
        ttft_reprefill, engine_reprefill, _ = _first_token(manager, reprefill_id, params)
        restores = manager.restores
        manager.close()
        device, used_dtype = engine.device, engine.dtype
    store.close()
    return {
        "model": model, "backend": backend, "device": device, "dtype": used_dtype,
        "prompt_tokens": prompt_tokens, "state_bytes": state_bytes, "restored": restores == 1,
        "ttft_restored_s": ttft_restored, "ttft_reprefill_s": ttft_reprefill,
        "engine_ttft_restored_s": engine_restored, "engine_ttft_reprefill_s": engine_reprefill,
        "speedup": ttft_reprefill / ttft_restored,
    }


def _messages(store: Store, cid: int) -> list[dict]:
    from app.conversations import chat_messages

    return chat_messages(store, cid)


def bulk_fill(store: Store, conversations: int, messages_each: int) -> None:
    """Insert `conversations` × `messages_each` messages in two bulk transactions."""
    now = time.time()
    db = store.db
    with db.atomic():
        db["conversations"].insert_all(
            ({"id": c + 1, "title": f"Conversation {c + 1}: {_filler(4, c)}", "created_at": now + c,
              "updated_at": now + c, "pinned": int(c % 97 == 0), "model": None, "system_prompt": "",
              "sampling": "{}"} for c in range(conversations)), batch_size=1000)
    with db.atomic():
        db["messages"].insert_all(
            ({"conversation_id": c + 1, "position": p, "role": "user" if p % 2 == 0 else "assistant",
              "content": _filler(40, c * messages_each + p) + _rare(c * messages_each + p), "status": "complete",
              "created_at": now + c, "updated_at": now + c}
             for c in range(conversations) for p in range(messages_each)), batch_size=1000)


def _rare(n: int) -> str:
    """One message in 1,000 carries a rare word, for a selective search beside the common one."""
    return " Zephyrus." if n % 1000 == 0 else ""


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def bench_store(conversations: int = 1000, messages_each: int = 100, runs: int = 20) -> dict:
    """List and search latency over a bulk-filled store in the current CONFAB_HOME."""
    store = open_store().store
    started = time.perf_counter()
    bulk_fill(store, conversations, messages_each)
    fill_s = time.perf_counter() - started
    list_ms = _median_ms(store.list_conversations, runs)
    search_ms = _median_ms(lambda: store.search("lantern orchard"), runs)
    search_rare_ms = _median_ms(lambda: store.search("zephyr"), runs)
    hits = len(store.search("zephyr", limit=1000))
    store.close()
    open_ms = _median_ms(lambda: open_store().store.close(), 3)
    return {"conversations": conversations, "messages": conversations * messages_each, "fill_s": fill_s,
            "open_ms": open_ms, "list_ms": list_ms, "search_ms": search_ms, "search_rare_ms": search_rare_ms,
            "search_rare_hits": hits}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app.store.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--backend", default="torch", choices=("torch", "mlx"))
    parser.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model source (default: the bundled one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="confab-bench-") as home:
        os.environ["CONFAB_HOME"] = str(Path(home) / "restore")
        result = bench_restore(args.backend, args.model, args.dtype)
        os.environ["CONFAB_HOME"] = str(Path(home) / "store")
        result.update(bench_store())
    if args.json:
        print(json.dumps(result))
        return
    print(f"model {result['model']} on {result['backend']}/{result['device']} ({result['dtype']}), "
          f"{result['prompt_tokens']}-token prompt, saved state {result['state_bytes'] / 2**20:.1f} MiB")
    print(f"  TTFT after restart, restored from saved state: {result['ttft_restored_s'] * 1000:8.1f} ms"
          f"  (engine: {result['engine_ttft_restored_s'] * 1000:.1f} ms)")
    print(f"  TTFT after restart, re-prefilled from text:    {result['ttft_reprefill_s'] * 1000:8.1f} ms"
          f"  (engine: {result['engine_ttft_reprefill_s'] * 1000:.1f} ms)")
    print(f"  re-prefill / restored: {result['speedup']:.1f}x")
    print(f"store with {result['conversations']} conversations x {result['messages'] // result['conversations']} "
          f"messages (bulk fill {result['fill_s']:.1f} s)")
    print(f"  open the store (integrity and search index checks): {result['open_ms']:.0f} ms (median of 3)")
    print(f"  list conversations: {result['list_ms']:.2f} ms (median)")
    print(f"  search 'lantern orchard' (every message matches; top 50): {result['search_ms']:.2f} ms (median)")
    print(f"  search prefix 'zephyr' ({result['search_rare_hits']} matches): {result['search_rare_ms']:.2f} ms (median)")


if __name__ == "__main__":
    main()
