"""What real OpenAI clients send is accepted: the SDK's own `model_dump()` messages, null content on
assistant turns, parts with cache_control, empty tools; endpoints this server lacks answer a clear
OpenAI-shaped error, and models.retrieve works."""

from __future__ import annotations

import openai
import pytest

from tests.server.helpers import chat_body, client, http

DUMPED = {"role": "assistant", "content": "Hello there.", "refusal": None, "tool_calls": None, "audio": None,
          "annotations": None, "function_call": None}


@pytest.mark.parametrize("messages", [
    [{"role": "user", "content": "Hi"}, DUMPED, {"role": "user", "content": "And now?"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": None}, {"role": "user", "content": "Hm?"}],
    [{"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]}],
])
def test_client_shaped_messages_are_accepted(serve, tiny_engine, messages):
    response = http(serve(tiny_engine)).post("/v1/chat/completions", json={**chat_body(), "messages": messages})
    assert response.status_code == 200, response.text


def test_sdk_round_trip_of_its_own_reply_object(serve, tiny_engine):
    api = client(serve(tiny_engine))
    history = [{"role": "user", "content": "Hi"}]
    first = api.chat.completions.create(model=tiny_engine.source, messages=history, max_tokens=4, temperature=0)
    history += [first.choices[0].message.model_dump(), {"role": "user", "content": "More"}]
    assert api.chat.completions.create(model=tiny_engine.source, messages=history, max_tokens=4).choices


@pytest.mark.parametrize("extra", [{"tools": []}, {"tool_choice": "none"}, {"top_p": 0}])
def test_neutral_fields_are_accepted(serve, tiny_engine, extra):
    response = http(serve(tiny_engine)).post("/v1/chat/completions", json=chat_body(**extra))
    assert response.status_code == 200, response.text


def test_top_p_0_keeps_only_the_likeliest_token(serve, tiny_engine):
    h = http(serve(tiny_engine))
    greedy = h.post("/v1/completions", json={"prompt": "The sea", "max_tokens": 8, "temperature": 0}).json()
    narrow = h.post("/v1/completions", json={"prompt": "The sea", "max_tokens": 8, "temperature": 1, "top_p": 0,
                                              "seed": 3}).json()
    assert narrow["choices"][0]["text"] == greedy["choices"][0]["text"]


def test_a_bad_seed_says_so_in_words(serve, tiny_engine):
    error = http(serve(tiny_engine)).post("/v1/chat/completions", json=chat_body(seed=-1)).json()["error"]
    assert "seed" in error["message"] and "SamplingParams" not in error["message"] and "-1" in error["message"]


def test_models_retrieve_answers_the_loaded_model(serve, tiny_engine):
    model = client(serve(tiny_engine)).models.retrieve(tiny_engine.source)
    assert model.id == tiny_engine.source and model.object == "model"


def test_models_retrieve_of_another_model_is_404(serve, tiny_engine):
    with pytest.raises(openai.NotFoundError) as caught:
        client(serve(tiny_engine)).models.retrieve("gpt-4o")
    assert caught.value.code == "model_not_found"


def test_embeddings_without_an_embedding_model_answer_a_clear_error(serve, tiny_engine):
    api = client(serve(tiny_engine))  # a host given no embedder, as `serve --embedding-model none`
    with pytest.raises(openai.NotFoundError) as caught:
        api.embeddings.create(model=tiny_engine.source, input="Hi")
    assert "serves no embedding model" in caught.value.message
    unknown = http(serve(tiny_engine)).get("/v1/nothing-here").json()["error"]
    assert unknown["code"] == "not_found" and "/v1/chat/completions" in unknown["message"]
