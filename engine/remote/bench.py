"""The remote engine's share of `python -m engine serve --bench`: aggregate tok/s of N conversations
streaming at once through RemoteEngine (the openai client) to a server, to set beside the same N
sessions in-process. Printed, never asserted."""

from __future__ import annotations

import threading
import time

from ..types import SamplingParams
from .engine import RemoteEngine


def remote_aggregate(base_url: str, model: str, conversations: list[list[dict]], tokens: int) -> float:
    """Tokens per second of all `conversations` replying at once, each `tokens` long, through one
    RemoteEngine (a session and a reader thread per conversation, as the app runs them)."""
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_stop=True)
    with RemoteEngine.connect(base_url, model=model, max_sessions=len(conversations)) as engine:
        with engine.open_session() as warm:  # the first request pays the client's connection set-up
            warm.chat(conversations[0], SamplingParams(temperature=0, max_tokens=2)).text()
        sessions = [engine.open_session() for _ in conversations]
        counts = [0] * len(sessions)
        started = time.perf_counter()
        streams = [s.chat(m, params) for s, m in zip(sessions, conversations)]

        def drain(i: int) -> None:
            for chunk in streams[i]:
                if chunk.stats is not None:
                    counts[i] = chunk.stats.generated_tokens

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(streams))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - started)
