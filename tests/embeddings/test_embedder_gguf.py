"""An embedding GGUF on llama.cpp: the bundled model's own weights written as a float32 GGUF give the
same vectors as torch (the reference), tokenized the same; a chat model's GGUF is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from engine.embeddings import Embedder, locate
from engine.errors import ModelLoadError
from tests.embeddings.bert_gguf import write_bert_gguf

pytest.importorskip("llama_cpp")

TEXTS = ["That is a happy person", "That is a happy dog", "Today is a sunny day",
         "The with statement calls __enter__ and then __exit__, even after an exception. " * 4, "Ünïcode naïve café"]


@pytest.fixture(scope="module")
def gguf_embedder(tmp_path_factory):
    path = write_bert_gguf(locate("bundled:all-minilm-l6-v2").path, tmp_path_factory.mktemp("gguf") / "minilm.gguf")
    with Embedder(str(path)) as e:
        yield e


def test_the_gguf_is_read_as_an_embedding_model(gguf_embedder):
    assert gguf_embedder.backend == "llamacpp" and gguf_embedder.model.pooling == "mean"
    assert gguf_embedder.dimensions == 384 and gguf_embedder.window == 512
    assert gguf_embedder.model.name == "minilm"


def test_same_tokens_as_the_folder(gguf_embedder, embedder):
    assert gguf_embedder.tokenizer.text_ids(TEXTS) == embedder.tokenizer.text_ids(TEXTS)
    assert (gguf_embedder.tokenizer.prefix, gguf_embedder.tokenizer.suffix) == ([101], [102])


def test_llamacpp_vectors_match_torch(gguf_embedder, embedder):
    got = gguf_embedder.embed(TEXTS).vectors
    want = embedder.embed(TEXTS).vectors
    assert np.abs(got - want).max() < 2e-3
    assert ((got * want).sum(axis=1) > 0.9999).all()
    ids = gguf_embedder.tokenizer.text_ids(["Hello world"])[0]
    both = gguf_embedder.embed(["Hello world", ids]).vectors
    assert np.abs(both[0] - both[1]).max() < 1e-6


def test_a_chat_models_gguf_is_refused():
    from engine.models.sources import bundled_gguf

    with pytest.raises(ModelLoadError, match="not a sentence-embedding model"):
        Embedder(str(bundled_gguf("smollm2-135m-instruct")))
