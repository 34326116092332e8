"""A seeded reply is the same text whether it decodes alone or beside other sessions.

The sampler's generator is the session's own (seeded per reply), and a seeded sampled reply is
stepped in its own forward: a batched forward's logits differ slightly from a solo one's
(left padding, other kernels), enough to tip a sampled token now and then and the whole text after it.
"""

from __future__ import annotations

import pytest

from engine import Constraint, SamplingParams
from tests.engine.helpers import prompt_ids

# A grammar, log probabilities and penalties ride on the job: they must not pull it back into the batch.
# Penalties read the session's own tokens: its neighbours' must not leak into them.
EXTRAS = {"plain": {}, "constrained with logprobs": {
    "constraint": Constraint.regex(r"[a-z ]{4,40}\."), "logprobs": 2}, "penalized": {
    "repetition_penalty": 1.3, "presence_penalty": 0.5, "frequency_penalty": 0.5, "repeat_last_n": 16}}

NEIGHBOURS = ["Write a short poem about the sea", "Hello", "A recipe for bread: flour, water, salt and yeast"]


def _reply(stream) -> list:
    """Token ids and, where asked, each token's log probabilities."""
    return [(chunk.token_ids, chunk.logprobs) for chunk in stream]


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_a_seeded_reply_is_the_same_alone_or_batched(make_engine, tiny_models, backend, extra):
    # A random tiny model's flat distributions tip on smaller logit differences than a trained one's.
    engine = make_engine(tiny_models["llama"], backend, max_context=512)
    params = SamplingParams(temperature=1.0, max_tokens=24, seed=11, ignore_stop=True, **EXTRAS[extra])
    prompt = prompt_ids(engine, "Tell me a story about a lighthouse keeper")
    with engine.open_session() as session:
        alone = _reply(session.generate(prompt, params))
    others = [engine.open_session() for _ in NEIGHBOURS]
    greedy = SamplingParams(temperature=0, max_tokens=60, ignore_stop=True)
    streams = [o.generate(prompt_ids(engine, text), greedy) for o, text in zip(others, NEIGHBOURS)]
    for stream in streams:
        next(iter(stream))  # every neighbour is decoding before the seeded reply starts
    merges = _joint_steps(engine)
    with engine.open_session() as session:
        together = _reply(session.generate(prompt, params))
    for stream, other in zip(streams, others):  # their part is done: stopped, not decoded to their 60th token
        other.close()
        list(stream)
    assert _joint_steps(engine) > merges  # the neighbours did decode in batches meanwhile
    assert together == alone


def _joint_steps(engine) -> int:
    """Forwards that stepped several sessions together so far (a merged batch, or one llama.cpp call)."""
    worker = engine._worker
    return worker.together.joint if worker.together is not None else worker.batch.merges
