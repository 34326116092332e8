"""Batched decoding: a session's greedy tokens do not depend on who shares its forward.

Sessions join (after a chunked prefill) and leave (finished, cancelled) between steps. Joins are
triggered from the engine thread at a fixed round, so the batch sizes are the same on every run.
"""

from __future__ import annotations

import itertools
import threading

import pytest

from engine import SamplingParams
from engine.errors import SessionPoisonedError
from tests.engine.helpers import prompt_ids, token_ids

TEXTS = [
    "The history of the printing press begins",
    "Write a short poem about the sea",
    "List three prime numbers and explain why each of them is prime, in plain words for a child",
    "Hello",
    "A recipe for bread: flour, water, salt and yeast, mixed and left to rise overnight in a cool room",
    "Why is the sky blue?",
    "Translate to French: the cat sleeps on the warm windowsill",
    "Once upon a time in a small village by the mountains there lived an old clockmaker",
]
EARLY_TOKENS = [16, 40, 80, 100]  # the first leaves mid-way; the last outlasts the watched session
LATE_TOKENS = [20, 30, 90]
JOIN_AT = 10


def greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=n, ignore_stop=True)


def watched_with_others(engine, n_others: int, n_tokens: int) -> tuple[list[int], list[int]]:
    """The watched session's tokens among `n_others` neighbours, and the row count of every batched forward."""
    worker = engine._worker
    rows: list[int] = []
    real_forward, real_round = worker.batch.forward, worker.step_round
    worker.batch.forward = lambda feeds: (rows.append(len(feeds)), real_forward(feeds))[1]
    if worker.together is not None:  # llama.cpp: each round is one call; count those holding several sessions
        real_call = worker.together._call
        worker.together._call = lambda items: (len(items) > 1 and rows.append(len(items)), real_call(items))[1]
    others = [engine.open_session() for _ in range(n_others)]
    early, late = others[: (n_others + 1) // 2], others[(n_others + 1) // 2:]
    watched = engine.open_session()
    late_streams: list = []
    rounds = itertools.count()

    def step_round() -> None:  # runs on the engine thread: newcomers join at a fixed round
        if next(rounds) == JOIN_AT:
            late_streams.extend(
                s.generate(prompt_ids(engine, TEXTS[4 + i]), greedy(LATE_TOKENS[i])) for i, s in enumerate(late)
            )
        real_round()

    worker.step_round = step_round
    gate = threading.Event()
    engine._post(lambda w: gate.wait(30))  # hold the engine so every early request starts in one round
    early_streams = [s.generate(prompt_ids(engine, TEXTS[1 + i]), greedy(EARLY_TOKENS[i])) for i, s in enumerate(early)]
    stream = watched.generate(prompt_ids(engine, TEXTS[0]), greedy(n_tokens))
    gate.set()
    got = token_ids(stream)
    for i, other in enumerate(early_streams):
        assert len(token_ids(other)) == EARLY_TOKENS[i]
    for i, other in enumerate(late_streams):
        assert len(token_ids(other)) == LATE_TOKENS[i]
    for s in others + [watched]:
        s.close()
    worker.batch.forward, worker.step_round = real_forward, real_round
    if worker.together is not None:
        del worker.together._call
    return got, rows


def alone(engine, n_tokens: int) -> list[int]:
    with engine.open_session() as s:
        return token_ids(s.generate(prompt_ids(engine, TEXTS[0]), greedy(n_tokens)))


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_batched_tokens_equal_alone_with_1_3_7_others(make_engine, tiny_models, backend, arch):
    engine = make_engine(tiny_models[arch], backend)
    solo = alone(engine, 64)
    for n_others in (1, 3, 7):
        got, rows = watched_with_others(engine, n_others, 64)
        assert got == solo, n_others
        assert max(rows) == n_others + 1, (n_others, sorted(set(rows)))  # everyone shared a forward


def test_bundled_model_batched_equals_alone(make_engine):
    engine = make_engine("bundled:smollm2-135m-instruct", "torch")
    solo = alone(engine, 32)
    got, rows = watched_with_others(engine, 3, 32)
    assert got == solo
    assert max(rows) == 4


def test_unbatched_when_max_batch_is_1_or_deterministic(make_engine, tiny_models, backend):
    # deterministic in bfloat16 (torch): a batched bf16 forward may round differently from a solo one
    bf16 = dict(dtype="bfloat16") if backend == "torch" else {}
    for config in (dict(max_batch=1), dict(deterministic=True, **bf16)):
        engine = make_engine(tiny_models["llama"], backend, **config)
        solo = alone(engine, 32)
        got, rows = watched_with_others(engine, 3, 32)
        assert got == solo and rows == [], config


def test_failed_batched_forward_poisons_only_the_faulty_session(tiny_engine, monkeypatch):
    """The batch fails; each member is retried alone, and only the one whose forward fails is poisoned."""
    engine, worker = tiny_engine, tiny_engine._worker
    solo = alone(engine, 48)
    bad, good = engine.open_session(), engine.open_session()
    real_batch, real_forward, real_round = worker.backend.forward_batch, worker.backend.forward, worker.step_round
    rounds = itertools.count()
    faulty = threading.Event()

    def forward_batch(batch, ids):
        if faulty.is_set():
            raise RuntimeError("simulated device fault")
        return real_batch(batch, ids)

    def forward(state, ids):
        if faulty.is_set() and state is worker.slots[bad.id].state:
            raise RuntimeError("simulated device fault")
        return real_forward(state, ids)

    def step_round():
        if next(rounds) == JOIN_AT:
            faulty.set()
        real_round()

    if hasattr(worker.backend, "step"):  # llama.cpp: the joint call fails, then the bad session's own
        real_step = worker.backend.step

        def step(items):
            if faulty.is_set() and (len(items) > 1 or items[0][0] is worker.slots[bad.id].state):
                raise RuntimeError("simulated device fault")
            return real_step(items)

        monkeypatch.setattr(worker.backend, "step", step)
    monkeypatch.setattr(worker.backend, "forward_batch", forward_batch)
    monkeypatch.setattr(worker.backend, "forward", forward)
    monkeypatch.setattr(worker, "step_round", step_round)
    gate = threading.Event()
    engine._post(lambda w: gate.wait(30))
    bad_stream = bad.generate(prompt_ids(engine, TEXTS[2]), greedy(48))
    good_stream = good.generate(prompt_ids(engine, TEXTS[0]), greedy(48))
    gate.set()
    with pytest.raises(SessionPoisonedError, match="simulated device fault"):
        token_ids(bad_stream)
    assert token_ids(good_stream) == solo
    monkeypatch.setattr(worker, "step_round", real_round)
    faulty.clear()
    bad.reset()
    assert len(token_ids(bad.generate([1, 2, 3], greedy(8)))) == 8
    bad.close()
    good.close()


def test_fault_mid_batched_forward_is_rolled_back(make_engine, tiny_models, monkeypatch):
    """A layer fails after earlier layers appended to the batch cache: the step is undone and redone alone.
    (A layer fault needs Python layers: on CUDA the eager batch; a captured graph's faults surface at the
    copy of its logits, test_batch_rollback.py.)"""
    monkeypatch.setenv("CONFAB_CUDA_GRAPHS", "0")
    engine = make_engine(tiny_models["llama"], "torch")
    layer = engine._worker.backend.model.model.layers[1]
    solo = alone(engine, 48)
    real_layer_forward, failures = layer.forward, itertools.count()

    def layer_forward(hidden_states, *args, **kwargs):
        if hidden_states.shape[0] > 1 and next(failures) % 5 == 0:  # every fifth batched call fails
            raise RuntimeError("simulated fault in layer 1")
        return real_layer_forward(hidden_states, *args, **kwargs)

    monkeypatch.setattr(layer, "forward", layer_forward)
    got, rows = watched_with_others(engine, 3, 48)
    assert got == solo
    assert rows and next(failures) > 5
