"""Chat and text completions on the bundled model through the official openai client."""

from __future__ import annotations

from tests.server.helpers import client

HI = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


def test_chat_not_streamed_answers_with_usage(serve, bundled_engine):
    server = serve(bundled_engine)
    reply = client(server).chat.completions.create(
        model="bundled:smollm2-135m-instruct", messages=HI, temperature=0, max_tokens=12)
    assert reply.object == "chat.completion"
    assert reply.choices[0].message.role == "assistant"
    assert "Paris" in reply.choices[0].message.content
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage.prompt_tokens > 10 and 1 <= reply.usage.completion_tokens <= 12
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_chat_streamed_matches_not_streamed_and_reports_usage(serve, bundled_engine):
    server = serve(bundled_engine)
    api = client(server)
    whole = api.chat.completions.create(messages=HI, model="smollm2-135m-instruct", temperature=0, max_tokens=12)
    chunks = list(api.chat.completions.create(messages=HI, model="bundled:smollm2-135m-instruct", temperature=0,
                                              max_tokens=12, stream=True, stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishing = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishing == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert all(c.usage is None for c in chunks[:-1])


def test_text_completions_streamed_and_not(serve, bundled_engine):
    server = serve(bundled_engine)
    api = client(server)
    whole = api.completions.create(model="bundled:smollm2-135m-instruct", prompt="The capital of France is",
                                   temperature=0, max_tokens=6)
    assert whole.object == "text_completion"
    assert "Paris" in whole.choices[0].text
    assert whole.usage.completion_tokens == 6 and whole.choices[0].finish_reason == "length"
    chunks = list(api.completions.create(model="bundled:smollm2-135m-instruct", prompt="The capital of France is",
                                         temperature=0, max_tokens=6, stream=True))
    assert all(c.object == "text_completion" for c in chunks)
    assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text


def test_stop_string_cuts_the_reply_before_it(serve, bundled_engine):
    server = serve(bundled_engine)
    api = client(server)
    full = api.completions.create(model="bundled:smollm2-135m-instruct", prompt="1, 2, 3, 4,",
                                  temperature=0, max_tokens=12).choices[0].text
    assert " 6" in full
    for stream in (False, True):
        reply = api.completions.create(model="bundled:smollm2-135m-instruct", prompt="1, 2, 3, 4,",
                                       temperature=0, max_tokens=12, stop=[" 6"], stream=stream)
        pieces = list(reply) if stream else [reply]
        text = "".join(p.choices[0].text for p in pieces)
        assert text == full[: full.index(" 6")]
        assert [p.choices[0].finish_reason for p in pieces if p.choices[0].finish_reason] == ["stop"]
