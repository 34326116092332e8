"""A seeded reply is the same text whether it decodes alone or beside other sessions.

The sampler's generator is the session's own (seeded per reply), and a seeded sampled reply is
stepped in its own forward: a batched forward's logits differ slightly from a solo one's
(left padding, other kernels), enough to tip a sampled token now and then and the whole text after it.
"""

from __future__ import annotations

from engine import SamplingParams
from tests.engine.helpers import prompt_ids, token_ids

NEIGHBOURS = ["Write a short poem about the sea", "Hello", "A recipe for bread: flour, water, salt and yeast"]


def test_a_seeded_reply_is_the_same_alone_or_batched(make_engine, backend):
    engine = make_engine("bundled:smollm2-135m-instruct", backend, max_context=512)
    params = SamplingParams(temperature=1.0, max_tokens=24, seed=11, ignore_stop=True)
    prompt = prompt_ids(engine, "Tell me a story about a lighthouse keeper")
    with engine.open_session() as session:
        alone = token_ids(session.generate(prompt, params))
    others = [engine.open_session() for _ in NEIGHBOURS]
    greedy = SamplingParams(temperature=0, max_tokens=60, ignore_stop=True)
    streams = [o.generate(prompt_ids(engine, text), greedy) for o, text in zip(others, NEIGHBOURS)]
    for stream in streams:
        next(iter(stream))  # every neighbour is decoding before the seeded reply starts
    merges = engine._worker.batch.merges
    with engine.open_session() as session:
        together = token_ids(session.generate(prompt, params))
    for stream, other in zip(streams, others):
        token_ids(stream)
        other.close()
    assert engine._worker.batch.merges > merges  # the neighbours did decode in batches meanwhile
    assert together == alone
