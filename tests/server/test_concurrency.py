"""Many clients at once: each gets exactly its solo tokens (float32, greedy), and a dropped
connection frees its session."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from tests.server.helpers import chat_body, client, http

PROMPTS = [f"Story number {i} begins with" for i in range(8)]


def _stream_text(server, prompt: str, session_id: str) -> tuple[str, str]:
    chunks = client(server).completions.create(model=None, prompt=prompt, temperature=0, max_tokens=16,
                                               stream=True, extra_body={"session_id": session_id})
    pieces = list(chunks)
    return "".join(c.choices[0].text for c in pieces), pieces[-1].choices[0].finish_reason


def test_eight_streaming_clients_each_get_their_solo_tokens(serve, tiny_engine):
    server = serve(tiny_engine)
    alone = [_stream_text(server, p, f"solo-{i}") for i, p in enumerate(PROMPTS)]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda i: _stream_text(server, PROMPTS[i], f"together-{i}"), range(8)))
    assert together == alone
    assert len(set(text for text, _ in alone)) > 1  # the prompts really differ


def test_a_dropped_stream_cancels_its_reply_and_frees_the_session(serve, tiny_engine):
    server = serve(tiny_engine)
    h = http(server)
    body = chat_body(max_tokens=200, stream=True, session_id="eve")
    with h.stream("POST", "/v1/chat/completions", json=body) as response:
        lines = response.iter_lines()
        for line in lines:
            if '"content":"' in line and '"role"' not in line:
                break  # one token arrived; now hang up
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        eve = next(s for s in h.get("/v1/sessions").json()["data"] if s["id"] == "eve")
        if not eve["busy"]:
            break
        time.sleep(0.05)
    assert not eve["busy"]
    assert eve["tokens"] < 150  # the engine stopped the reply instead of running to its 200 tokens
    follow = h.post("/v1/chat/completions", json=chat_body(session_id="eve", max_tokens=2))
    assert follow.status_code == 200  # and the session takes a new turn (no 409)
