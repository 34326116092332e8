"""Seeds over HTTP: concurrent requests with one seed each get the text that seed gives alone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.server.helpers import http


def test_same_seed_same_text_alone_or_among_concurrent_requests(serve, bundled_engine):
    server = serve(bundled_engine)

    def ask(i: int) -> str:
        body = {"messages": [{"role": "user", "content": "Tell me a story"}], "temperature": 1.0, "seed": 7,
                "max_tokens": 24, "session_id": f"seeded-{i}"}
        return http(server).post("/v1/chat/completions", json=body).json()["choices"][0]["message"]["content"]

    alone = ask(0)
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(ask, range(1, 5)))
    assert together == [alone] * 4
