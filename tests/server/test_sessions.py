"""Warm turns: a named session prefills only the new suffix; without a name, the prefix pool does."""

from __future__ import annotations

from tests.server.helpers import client, http

MODEL = "bundled:smollm2-135m-instruct"


def _two_turns(api, **extra):
    history = [{"role": "user", "content": "Name a color."}]
    first = api.chat.completions.create(model=MODEL, messages=history, temperature=0, max_tokens=8, **extra)
    history += [{"role": "assistant", "content": first.choices[0].message.content},
                {"role": "user", "content": "And another one?"}]
    second = api.chat.completions.create(model=MODEL, messages=history, temperature=0, max_tokens=8, **extra)
    return first, second


def test_named_session_second_turn_reuses_prompt_and_reply(serve, bundled_engine):
    server = serve(bundled_engine)
    first, second = _two_turns(client(server), extra_body={"session_id": "alice"})
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens + first.usage.completion_tokens - 1
    listed = http(server).get("/v1/sessions").json()["data"]
    alice = next(s for s in listed if s["id"] == "alice")
    assert alice["named"] and alice["tokens"] > second.usage.prompt_tokens and alice["bytes"] > 0
    assert alice["idle_s"] >= 0 and not alice["busy"]


def test_session_id_header_is_the_same_session(serve, bundled_engine):
    server = serve(bundled_engine)
    api = client(server)
    first, second = _two_turns(api, extra_headers={"X-Session-Id": "bob"})
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens
    assert [s["id"] for s in http(server).get("/v1/sessions").json()["data"]] == ["bob"]


def test_without_session_id_the_prefix_pool_serves_warm_turns(serve, bundled_engine):
    server = serve(bundled_engine)
    api = client(server)
    other = api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Count to three."}],
                                        temperature=0, max_tokens=8)
    first, second = _two_turns(api)
    assert other.usage.prompt_tokens_details.cached_tokens <= first.usage.prompt_tokens
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens + first.usage.completion_tokens - 1


def test_delete_frees_a_session_and_unknown_is_404(serve, bundled_engine):
    server = serve(bundled_engine)
    client(server).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}],
                                           temperature=0, max_tokens=2, extra_body={"session_id": "carol"})
    h = http(server)
    live = bundled_engine.capacity().live_sessions
    assert h.delete("/v1/sessions/carol").json() == {"id": "carol", "object": "session", "deleted": True}
    assert bundled_engine.capacity().live_sessions == live - 1
    missing = h.delete("/v1/sessions/carol")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "session_not_found"
