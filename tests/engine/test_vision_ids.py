"""Image ids (engine/images.py): made from an image's bytes, never a vocabulary id, never cut, never
drafted or penalized. No model needed."""

from __future__ import annotations

import numpy as np

from engine.drafts.lookup import LookupIndex
from engine.images import digest, image_ids, is_image_id, span_floor, starts_span, text_ids
from engine import SamplingParams
from engine.reply.penalties import apply_penalties


def test_the_same_bytes_give_the_same_ids_and_other_bytes_others_from_the_first():
    a, b = image_ids(digest(b"picture one"), 16), image_ids(digest(b"picture two"), 16)
    assert a == image_ids(digest(b"picture one"), 16)
    assert all(is_image_id(t) for t in a + b) and len(set(a)) == 16
    assert not set(a) & set(b)
    assert starts_span(a[0]) and not any(starts_span(t) for t in a[1:])


def test_a_kept_prefix_never_ends_inside_an_image():
    tokens = [5, 6, *image_ids(digest(b"x"), 4), 7]
    assert [span_floor(tokens, k) for k in range(len(tokens) + 1)] == [0, 1, 2, 2, 2, 2, 6, 7]
    assert text_ids(tokens) == [5, 6, 7]


def test_a_lookup_draft_stops_before_an_image():
    image = list(image_ids(digest(b"x"), 3))
    index = LookupIndex([1, 2, 3, 4, *image, 9, 1, 2, 3, 4])
    assert index.propose(5) == []  # what followed "1 2 3 4" was an image: nothing to draft
    index = LookupIndex([1, 2, 3, 4, 8, *image, 1, 2, 3, 4])
    assert index.propose(5) == [8]


def test_a_repetition_penalty_ignores_image_ids():
    logits = np.arange(10, dtype=np.float32) + 1
    params = SamplingParams(repetition_penalty=2.0, presence_penalty=0.5, frequency_penalty=0.5, repeat_last_n=-1)
    out = apply_penalties(logits, [3, *image_ids(digest(b"x"), 2)], params)
    assert out[3] < logits[3] and np.array_equal(np.delete(out, 3), np.delete(logits, 3))
