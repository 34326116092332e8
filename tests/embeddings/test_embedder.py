"""The embedding engine: its vectors against a plain float32 forward, lazy loading, memory counted,
and each bad input refused before any compute."""

from __future__ import annotations

import numpy as np
import pytest

from engine.embeddings import MAX_INPUTS, Embedder
from engine.embeddings.embedder import MAX_BATCH, MAX_BATCH_TOKENS, PAD_SLACK, batches
from engine.errors import CapacityError, ContextOverflowError, InvalidRequestError, ModelLoadError

TEXTS = ["That is a happy person", "That is a happy dog", "That is a very happy person", "Today is a sunny day",
         "The with statement calls __enter__ and then __exit__ when the block ends, even after an exception. " * 3]


def reference_vectors(folder, texts: list[str]) -> np.ndarray:
    """Each text alone (no padding), float32, mean of every token's last state, unit length: the
    model card's recipe, written apart from the engine's batched path."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder.path))
    model = AutoModel.from_pretrained(str(folder.path), dtype=torch.float32).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            ids = tokenizer(text, return_tensors="pt")
            state = model(**ids).last_hidden_state[0].numpy()
            mean = state.mean(axis=0)
            out.append(mean / np.linalg.norm(mean))
    return np.stack(out)


def test_batched_vectors_match_a_plain_float32_forward(embedder):
    got = embedder.embed(TEXTS).vectors
    want = reference_vectors(embedder.model, TEXTS)
    assert np.abs(got - want).max() < 1e-5  # padding and masking change nothing


def test_similar_sentences_are_closer_than_unrelated_ones(embedder):
    v = embedder.embed(TEXTS[:4]).vectors
    sims = v[1:] @ v[0]
    # the model card's example: "very happy person" > "happy dog" > "sunny day"
    assert sims[1] > sims[0] > sims[2]
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_token_ids_embed_as_the_text_they_spell(embedder):
    ids = embedder.tokenizer.text_ids(["Hello world"])[0]
    both = embedder.embed(["Hello world", ids])
    assert np.abs(both.vectors[0] - both.vectors[1]).max() < 1e-6
    assert both.tokens == (len(ids) + 2, len(ids) + 2)  # [CLS] … [SEP] around each


def test_lazy_load_and_memory_counted():
    e = Embedder(dtype="float32")  # before loading, the files' float32 bytes are counted
    try:
        assert not e.loaded
        before = e.memory
        assert 80 * 2**20 < before.weights < 100 * 2**20  # all-MiniLM-L6-v2: 22.7M float32 parameters
        assert before.working > 0
        e.embed(["load me"])
        assert e.loaded
        assert abs(e.memory.weights - before.weights) < 2**20
    finally:
        e.close()
    assert not e.loaded


def test_refused_when_memory_cannot_hold_it():
    e = Embedder(available=lambda: 50 * 2**20)
    with pytest.raises(CapacityError, match=r"needs \d+ MiB .* and 50 MiB is free"):
        e.embed(["x"])
    assert not e.loaded


@pytest.mark.parametrize("inputs, error, message", [
    ([], InvalidRequestError, "no inputs"),
    ([""], InvalidRequestError, "input 0 is empty"),
    (["fine", "   "], InvalidRequestError, "input 1 is empty"),
    (["x"] * (MAX_INPUTS + 1), InvalidRequestError, f"{MAX_INPUTS + 1} inputs in one call; at most {MAX_INPUTS}"),
    ([[7592, 30522]], InvalidRequestError, "token id 30522 is not in .* vocabulary"),
    ([[]], InvalidRequestError, "input 0 is empty"),
    (["word " * 300], ContextOverflowError, r"input 0 is 302 tokens; .* at most 256"),
    ("a string", InvalidRequestError, "must be a list"),
])
def test_bad_inputs_refused_before_loading(inputs, error, message):
    e = Embedder()
    with pytest.raises(error, match=message):
        e.embed(inputs)
    assert not e.loaded


def test_truncate_cuts_to_the_window_and_says_which(embedder):
    result = embedder.embed(["short", "word " * 300], truncate=True)
    assert result.truncated == (1,)
    assert result.tokens == (3, embedder.window)


def test_progress_per_batch(embedder):
    seen = []
    embedder.embed([f"text {i}" for i in range(MAX_BATCH + 5)], progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (MAX_BATCH + 5, MAX_BATCH + 5)
    assert len(seen) == 2


def test_batches_cover_every_input_once_within_limits():
    lengths = [((i * 37) % 250) + 3 for i in range(500)]
    groups = batches(lengths)
    assert sorted(i for g in groups for i in g) == list(range(500))
    for g in groups:
        assert len(g) <= MAX_BATCH
        assert len(g) * max(lengths[i] for i in g) <= MAX_BATCH_TOKENS
        width = max(lengths[i] for i in g)
        assert all(width - lengths[i] <= max(PAD_SLACK, width // 8) for i in g)


def test_a_batch_is_not_padded_far_past_its_inputs():
    # a document's passages, 32 to a call: one long passage used to pad 31 short ones to its width
    lengths = [256] + [60] * 31
    assert batches(lengths) == [[0], list(range(1, 32))]
    padded = sum(len(g) * max(lengths[i] for i in g) for g in batches(lengths))
    assert padded / sum(lengths) < 1.01
    assert len(batches([18, 12, 9, 5, 3])) == 1  # a few tokens of padding is not worth a forward


def test_unknown_sources_refused_in_words(tmp_path):
    with pytest.raises(ModelLoadError, match="unknown bundled embedding model 'nope'"):
        Embedder("bundled:nope")
    with pytest.raises(ModelLoadError, match="does not exist"):
        Embedder(str(tmp_path / "missing"))
    with pytest.raises(ModelLoadError, match="config.json"):
        Embedder(str(tmp_path))


def test_closed_mid_call_fails_by_name_and_a_later_call_loads_again():
    from engine.errors import EngineError

    e = Embedder()
    try:
        with pytest.raises(EngineError, match="closed"):
            e.embed([f"text {i}" for i in range(MAX_BATCH * 2)], progress=lambda done, total: e.close())
        assert not e.loaded
        assert e.embed(["again"]).vectors.shape == (1, 384) and e.loaded
    finally:
        e.close()


def test_a_dropped_embedder_stops_its_thread():
    import gc

    e = Embedder()
    e.embed(["x"])
    thread = e._runner.thread
    del e
    gc.collect()
    thread.join(30)
    assert not thread.is_alive()
