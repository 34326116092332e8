"""The server's request log (the app's Server view): each request as it ends, with its method,
path, client, status, tokens, time and the reason behind a refusal, streamed replies included."""

from __future__ import annotations

import threading

import httpx
import openai

from engine.server import RequestLog

CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0}


def test_each_request_is_logged_as_it_ends_with_its_tokens(serve, tiny_engine):
    log = RequestLog()
    heard, both = [], threading.Event()
    log.listen(lambda entry: (heard.append(entry), len(heard) == 2 and both.set()))
    server = serve(tiny_engine, request_log=log)
    client = openai.OpenAI(base_url=server.url, api_key="none")
    reply = client.chat.completions.create(**{**CHAT, "model": tiny_engine.source})
    stream = client.chat.completions.create(**{**CHAT, "model": tiny_engine.source}, stream=True,
                                            stream_options={"include_usage": True})
    streamed_usage = [c.usage for c in stream if c.usage][-1]
    # a streamed request is logged once its response has ended on the server, which may be just
    # after the client read its last event (this read the log too early once, in a shuffled run)
    assert both.wait(10)
    whole, streamed = log.entries()
    assert heard == [whole, streamed]
    assert (whole.method, whole.path, whole.status) == ("POST", "/v1/chat/completions", 200)
    assert whole.client.startswith("127.0.0.1:") and whole.seconds > 0 and not whole.streamed
    assert (whole.prompt_tokens, whole.completion_tokens) == (reply.usage.prompt_tokens,
                                                              reply.usage.completion_tokens)
    assert streamed.streamed and streamed.status == 200
    assert (streamed.prompt_tokens, streamed.completion_tokens) == (streamed_usage.prompt_tokens,
                                                                    streamed_usage.completion_tokens)


def test_a_refusal_is_logged_with_its_reason(serve, tiny_engine):
    log = RequestLog()
    server = serve(tiny_engine, request_log=log, api_key="secret")
    base = server.url.removesuffix("/v1")
    assert httpx.post(f"{base}/v1/chat/completions", json=CHAT).status_code == 401
    answered = httpx.post(f"{base}/v1/chat/completions", json=CHAT, headers={"Authorization": "Bearer secret"})
    assert answered.status_code == 404  # another model's name
    refused, unknown = log.entries()
    assert refused.status == 401 and "API key" in refused.error
    assert unknown.status == 404 and tiny_engine.source in unknown.error


def test_the_log_keeps_the_latest_requests_only(serve, tiny_engine):
    log = RequestLog(max_entries=3)
    server = serve(tiny_engine, request_log=log)
    base = server.url.removesuffix("/v1")
    for _ in range(5):
        httpx.get(f"{base}/v1/models")
    assert [e.path for e in log.entries()] == ["/v1/models"] * 3
    log.clear()
    assert log.entries() == []


def test_no_log_is_kept_unless_asked(serve, tiny_engine):
    server = serve(tiny_engine)
    assert httpx.get(server.url.removesuffix("/v1") + "/v1/models").status_code == 200
