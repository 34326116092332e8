"""`/v1/embeddings` through the official openai client (and LangChain's OpenAIEmbeddings) against a
real server on 127.0.0.1: shapes, encodings, token-id input, batching, /v1/models, and a clear 400 in
OpenAI's error shape for every bad input (never a 500)."""

from __future__ import annotations

import base64

import numpy as np
import openai
import pytest

from engine.embeddings import MAX_INPUTS
from engine.server import BackgroundServer, EngineHost, ServerSettings
from tests.server.helpers import client, http

MODEL = "bundled:all-minilm-l6-v2"
SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.", "The new movie is awesome."]


@pytest.fixture(scope="module")
def server(tiny_engine, embedder):
    server = BackgroundServer(EngineHost(tiny_engine, embedder=embedder), ServerSettings(), port=0).start()
    yield server
    server.stop()
    server.host.close()


def vectors(reply) -> np.ndarray:
    return np.array([d.embedding for d in reply.data], dtype=np.float32)


def test_similar_sentences_are_closer_than_unrelated_ones(server):
    reply = client(server).embeddings.create(model=MODEL, input=SENTENCES, encoding_format="float")
    v = vectors(reply)
    assert v.shape == (3, 384) and [d.index for d in reply.data] == [0, 1, 2]
    assert v[0] @ v[1] > 0.6 > 0.2 > v[0] @ v[2]
    assert reply.model == MODEL and reply.object == "list"
    assert reply.usage.prompt_tokens == reply.usage.total_tokens > 3 * 2


def test_base64_is_the_same_vectors_as_float(server):
    api = client(server)
    floats = vectors(api.embeddings.create(model=MODEL, input=SENTENCES, encoding_format="float"))
    raw = http(server).post("/v1/embeddings", json={"model": MODEL, "input": SENTENCES,
                                                    "encoding_format": "base64"}).json()
    decoded = np.stack([np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4") for d in raw["data"]])
    assert np.array_equal(decoded, floats)
    # the SDK asks for base64 by default and decodes it itself
    assert np.allclose(vectors(api.embeddings.create(model=MODEL, input=SENTENCES)), floats, atol=1e-6)


def test_token_ids_and_text_give_the_same_vector(server, embedder):
    ids = embedder.tokenizer.text_ids(["Hello world"])[0]
    api = client(server)
    text = vectors(api.embeddings.create(model=MODEL, input="Hello world", encoding_format="float"))
    one = vectors(api.embeddings.create(model=MODEL, input=ids, encoding_format="float"))
    many = vectors(api.embeddings.create(model=MODEL, input=[ids, ids], encoding_format="float"))
    assert np.allclose(text, one, atol=1e-6) and np.allclose(many, np.vstack([text, text]), atol=1e-6)


def test_many_inputs_are_batched_and_keep_their_order(server, embedder):
    texts = [f"note {i}: " + "word " * (i % 40) for i in range(100)]
    together = vectors(client(server).embeddings.create(model=MODEL, input=texts, encoding_format="float"))
    alone = np.vstack([embedder.embed([t]).vectors for t in texts[:5]])
    assert together.shape == (100, 384)
    if embedder.dtype.startswith("float32"):
        assert np.abs(together[:5] - alone).max() < 1e-5  # padding and batching change nothing
    else:  # bfloat16 (a CPU that computes in it) rounds a little differently in a batch of another shape
        assert ((together[:5] * alone).sum(axis=1) > 0.999).all()


def test_dimensions_only_the_models_own(server):
    api = client(server)
    assert vectors(api.embeddings.create(model=MODEL, input="x", dimensions=384, encoding_format="float")).shape == (1, 384)
    with pytest.raises(openai.BadRequestError) as caught:
        api.embeddings.create(model=MODEL, input="x", dimensions=128)
    assert "gives 384-dimension vectors and is not trained to be shortened" in caught.value.message


@pytest.mark.parametrize("body, message", [
    ({"input": ""}, "input 0 is empty"),
    ({"input": []}, "input is an empty list"),
    ({"input": ["fine", ""]}, "input 1 is empty"),
    ({"input": ["x"] * 10_000}, f"10000 inputs in one call; at most {MAX_INPUTS}"),
    ({"input": [[101, 99999]]}, "token id 99999 is not in"),
    ({"input": ["a", 1]}, "not a mixture"),
    ({"input": {"text": "a"}}, "must be a string or a list"),
    ({"input": "word " * 300}, "input 0 is 302 tokens; bundled:all-minilm-l6-v2 reads at most 256"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "x", "logit_bias": {}}, "logit_bias"),
])
def test_bad_inputs_get_a_clear_400(server, body, message):
    reply = http(server).post("/v1/embeddings", json={"model": MODEL, **body})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert message in error["message"] and error["type"] == "invalid_request_error"


def test_too_long_is_cut_only_when_asked_and_the_reply_says_so(server):
    api = client(server)
    with pytest.raises(openai.BadRequestError) as caught:
        api.embeddings.create(model=MODEL, input=["short", "word " * 300])
    assert caught.value.code == "context_length_exceeded"
    raw = api.embeddings.with_raw_response.create(model=MODEL, input=["short", "word " * 300],
                                                  extra_body={"truncate": True})
    assert raw.headers["x-confab-truncated"] == "inputs=1; max_tokens=256"
    body = raw.http_response.json()
    assert body["truncated"] == [1] and body["usage"]["prompt_tokens"] == 3 + 256


def test_models_list_the_chat_model_first_then_the_embedding_model(server, tiny_engine):
    api = client(server)
    listed = api.models.list().data
    assert [m.id for m in listed] == [tiny_engine.source, MODEL]
    entry = listed[1].model_dump()
    assert entry["type"] == "embedding" and entry["embedding"]["dimensions"] == 384
    assert entry["embedding"]["max_input_tokens"] == 256 and entry["embedding"]["backend"] == "torch"
    # counted, loaded or not: 22.7M parameters in float32 before loading, in float32 or bfloat16 after
    assert 40 * 2**20 < entry["embedding"]["weights_bytes"] < 100 * 2**20
    assert api.models.retrieve(MODEL).id == MODEL


def test_another_model_name_is_404(server, tiny_engine):
    with pytest.raises(openai.NotFoundError) as caught:
        client(server).embeddings.create(model="text-embedding-3-small", input="x")
    assert MODEL in caught.value.message


def test_langchain_openai_embeddings(server):
    langchain_openai = pytest.importorskip("langchain_openai")
    # LangChain tokenizes with tiktoken unless told not to (those ids are not this model's, and
    # tiktoken downloads its tables): with text, it works as against OpenAI
    lc = langchain_openai.OpenAIEmbeddings(model=MODEL, base_url=server.url, api_key="none",
                                           check_embedding_ctx_length=False, max_retries=0)
    docs = lc.embed_documents(SENTENCES)
    query = np.array(lc.embed_query("Someone has a meal."))
    sims = np.array(docs) @ query
    assert len(docs) == 3 and len(docs[0]) == 384
    assert sims[0] > sims[2] and sims[1] > sims[2]
