"""Images through every API (issue 36, item 4): chat/completions' `image_url` data URLs, Messages'
base64 `image` blocks and Responses' `input_image`, each answered as the engine answers the same
image; token counts include the image; every bad input is a 400 that says why, never a 500, and a
named session is left as it was."""

from __future__ import annotations

import base64

import anthropic
import httpx
import openai
import pytest

from engine import Engine, EngineConfig, SamplingParams, image_part
from engine.bench.vision_model import png
from tests.engine.conftest import vision_model  # noqa: F401 (fixture)

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

IMAGE = png(64, 48, seed=1)
OTHER = png(64, 48, seed=2)
ASK = "What is in this picture?"
TOKENS = 6


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def vision(vision_model):  # noqa: F811
    engine = Engine.load(str(vision_model), EngineConfig(backend="llamacpp", max_context=1024, max_sessions=4))
    yield engine
    engine.close()


@pytest.fixture
def server(serve, vision):
    return serve(vision)


def _engine_reply(engine, image: bytes, ignore_stop: bool = True) -> str:
    with engine.open_session() as session:
        messages = [{"role": "user", "content": [image_part(image), {"type": "text", "text": ASK}]}]
        params = SamplingParams(temperature=0, max_tokens=TOKENS, ignore_stop=ignore_stop)
        return session.chat(messages, params).text()


def _chat(server, image: bytes, **extra):
    client = openai.OpenAI(base_url=server.url, api_key="none")
    return client.chat.completions.create(
        model=server.host.engine.source, max_tokens=TOKENS, temperature=0, extra_body={"ignore_eos": True},
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(image)}},
                                               {"type": "text", "text": ASK}]}], **extra)


def test_every_api_answers_an_image_as_the_engine_does(server, vision):
    expected = _engine_reply(vision, IMAGE)
    chat = _chat(server, IMAGE)
    assert chat.choices[0].message.content == expected
    text_only = openai.OpenAI(base_url=server.url, api_key="none").chat.completions.create(
        model=vision.source, max_tokens=1, messages=[{"role": "user", "content": ASK}])
    assert chat.usage.prompt_tokens > text_only.usage.prompt_tokens + 8, "the image's positions are counted"

    claude = anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key="none")
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(IMAGE).decode()}}
    message = claude.messages.create(model=vision.source, max_tokens=TOKENS,
                                     extra_body={"temperature": 0, "ignore_eos": True},
                                     messages=[{"role": "user", "content": [block, {"type": "text", "text": ASK}]}])
    assert message.content[0].text == expected
    counted = claude.messages.count_tokens(model=vision.source,
                                           messages=[{"role": "user", "content": [block, {"type": "text", "text": ASK}]}])
    usage = message.usage  # the same image again: its positions come from the pooled session (cache_read)
    assert counted.input_tokens == usage.input_tokens + usage.cache_read_input_tokens
    assert usage.cache_read_input_tokens > usage.input_tokens, "the image's prefix was reused, not read again"

    responses = openai.OpenAI(base_url=server.url, api_key="none").responses.create(
        model=vision.source, max_output_tokens=TOKENS, temperature=0,
        input=[{"role": "user", "content": [{"type": "input_image", "image_url": data_url(IMAGE)},
                                            {"type": "input_text", "text": ASK}]}])
    assert responses.output_text == _engine_reply(vision, IMAGE, ignore_stop=False)


def test_two_images_get_their_own_answers(server, vision):
    assert _chat(server, OTHER).choices[0].message.content == _engine_reply(vision, OTHER)


def test_the_model_list_says_it_takes_images(server, vision, serve, tiny_engine):
    card = httpx.get(f"{server.url}/models").json()["data"][0]
    assert card["takes_images"] is True and "mmproj" in card["images"]
    text = serve(tiny_engine)
    assert httpx.get(f"{text.url}/models").json()["data"][0]["takes_images"] is False


@pytest.mark.parametrize("url, said", [
    ("https://example.com/cat.png", "does not fetch images from the web"),
    ("data:image/png;base64,!!!notbase64", "not valid base64"),
    ("data:image/png,rawbytes", "must hold base64 data"),
    (data_url(IMAGE[:40]), "image"),  # cut short: the engine says what is wrong with it
    (data_url(b"GIF89a" + b"\x00" * 10), "image"),
])
def test_a_bad_image_is_a_400_saying_why_and_the_session_goes_on(server, vision, url, said):
    body = {"model": vision.source, "max_tokens": 2, "session_id": "kept",
            "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                      {"type": "text", "text": ASK}]}]}
    refused = httpx.post(f"{server.url}/chat/completions", json=body, timeout=60)
    assert refused.status_code == 400, refused.text
    assert said in refused.json()["error"]["message"]
    good = {**body, "messages": [{"role": "user", "content": "Hello"}]}
    assert httpx.post(f"{server.url}/chat/completions", json=good, timeout=60).status_code == 200


def test_an_image_for_a_text_only_model_is_a_400_in_each_apis_shape(serve, tiny_engine):
    server = serve(tiny_engine)
    chat = httpx.post(f"{server.url}/chat/completions", timeout=60, json={
        "model": tiny_engine.source, "max_tokens": 2,
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(IMAGE)}}]}]})
    assert chat.status_code == 400 and "cannot see images" in chat.json()["error"]["message"]
    messages = httpx.post(f"{server.url.removesuffix('/v1')}/v1/messages", timeout=60, json={
        "model": tiny_engine.source, "max_tokens": 2, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}]})
    assert messages.status_code == 400 and messages.json()["type"] == "error"
    assert "does not fetch images from the web" in messages.json()["error"]["message"]


def test_a_conversation_on_a_remote_confab_sends_its_images(server, vision, serve, tiny_engine):
    """Connect to server…: images go to the server as data URLs and come back answered as the
    server's own engine answers them; a text-only server's model is not offered images, in words."""
    from engine import ImageFormatError, RemoteEngine

    remote = RemoteEngine.connect(server.url, "none", vision.source)
    try:
        assert remote.takes_images and "says its model reads them" in remote.images_reason
        messages = [{"role": "user", "content": [image_part(IMAGE), {"type": "text", "text": ASK}]}]
        params = SamplingParams(temperature=0, max_tokens=TOKENS, ignore_stop=True)
        with remote.open_session() as session:
            assert session.chat(messages, params).text() == _engine_reply(vision, IMAGE)
            with pytest.raises(ImageFormatError, match="WebP"):
                session.chat([{"role": "user", "content": [image_part(b"RIFF\x00\x00\x00\x00WEBPVP8 "),
                                                           {"type": "text", "text": ASK}]}], params)
    finally:
        remote.close()
    text_server = serve(tiny_engine)
    text_only = RemoteEngine.connect(text_server.url, "none")
    try:
        assert not text_only.takes_images and "reads text only" in text_only.images_reason
    finally:
        text_only.close()
