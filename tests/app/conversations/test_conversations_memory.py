"""Ordinary use does not grow the app's memory without bound: 200 messages over five conversations
(replies saved, parked and restored as the app does) leave the process's resident memory where the
first fifty put it, give or take a few MiB."""

from __future__ import annotations

import gc

import psutil
import pytest

from app.conversations import ConversationManager
from app.store import open_memory_store
from engine import Engine, EngineConfig, SamplingParams

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

SHORT = SamplingParams(temperature=0.7, seed=5, max_tokens=2, ignore_stop=True)
GROWTH_BOUND = 24 * 2**20
"""What the last 150 messages may add: their text in SQLite's page cache and allocator slack. A
leak of a session's state (tens of KiB a turn on this model) or of a reply's buffers passes it."""


def test_two_hundred_messages_leave_memory_bounded(tiny_q4_gguf, tmp_path):
    engine = Engine.load(str(tiny_q4_gguf), EngineConfig(backend="llamacpp", max_context=2048, max_sessions=3))
    store = open_memory_store(tmp_path / "states")
    manager = ConversationManager(engine, store)  # 3 sessions for 5 conversations: they take turns
    process = psutil.Process()
    try:
        conversations = [store.create_conversation(f"talk {i}").id for i in range(5)]
        for i in range(200):
            for _ in manager.reply(conversations[i % 5], f"{i}", SHORT):
                pass
            if i == 49:
                gc.collect()
                after_fifty = process.memory_info().rss
        gc.collect()
        engine._call(lambda worker: None)  # the engine thread has gone idle after the last reply
        grown = process.memory_info().rss - after_fifty
        assert grown < GROWTH_BOUND, f"{grown / 2**20:.1f} MiB more after 150 more messages"
        assert len(store.messages(conversations[0])) == 80
    finally:
        manager.close()
        engine.close()
        store.close()
