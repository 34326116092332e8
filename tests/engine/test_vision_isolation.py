"""An image session among others: its image is decoded for its own sequence alone, its text in the
joint rounds, and its reply is what it would be alone; two sessions' images never mix."""

from __future__ import annotations

import pytest

from engine.images import is_image_id
from tests.engine.helpers import token_ids
from tests.engine.images_helpers import asking, greedy, png

REPLY = 16


def _reply_beside(engine, messages, neighbours: int) -> list[int]:
    """The image session's greedy reply while `neighbours` text sessions prefill and decode."""
    others = [engine.open_session() for _ in range(neighbours)]
    streams = [s.chat([{"role": "user", "content": f"Tell me a story number {i}."}], greedy(24))
               for i, s in enumerate(others)]
    with engine.open_session() as session:
        mine = session.chat(messages, greedy(REPLY))
        got = token_ids(mine)
    for stream, s in zip(streams, others):
        assert len(token_ids(stream)) == 24
        s.close()
    return got


def test_an_image_sessions_reply_is_the_same_alone_and_beside_text_sessions(vision_engine, monkeypatch):
    backend = vision_engine._worker.backend
    step, step_image = backend.step, backend.step_image
    images: list[int] = []

    def text_only(items, rows=None):
        assert not any(is_image_id(t) for _, tokens in items for t in tokens), "an image id in a joint step"
        return step(items, rows)

    def one_image(seq, span):
        images.append(len(span.ids))
        step_image(seq, span)

    monkeypatch.setattr(backend, "step", text_only)
    monkeypatch.setattr(backend, "step_image", one_image)
    messages = asking(png(64, 64, seed=1))
    alone = _reply_beside(vision_engine, messages, 0)
    assert len(alone) == REPLY
    for neighbours in (1, 3, 7):
        assert _reply_beside(vision_engine, messages, neighbours) == alone, f"beside {neighbours} text sessions"
    assert vision_engine._worker.together.joint > 0  # the text did step in joint rounds
    assert images == [16] * 4  # each run's image decoded once, in a call of its own


def test_two_sessions_with_different_images_never_see_each_others(vision_engine, make_engine, vision_model):
    first, second = asking(png(64, 64, seed=1)), asking(png(64, 64, seed=2))
    with vision_engine.open_session() as a, vision_engine.open_session() as b:
        stream_a, stream_b = a.chat(first, greedy(REPLY)), b.chat(second, greedy(REPLY))
        together = token_ids(stream_a), token_ids(stream_b)
        ids_a, ids_b = [t for t in a.tokens if is_image_id(t)], [t for t in b.tokens if is_image_id(t)]
    assert ids_a and ids_b and not set(ids_a) & set(ids_b)  # each image's ids come from its own bytes
    reference = make_engine(vision_model, "llamacpp", max_context=1024)
    alone = []
    for messages in (first, second):
        with reference.open_session() as s:
            alone.append(token_ids(s.chat(messages, greedy(REPLY))))
    assert list(together) == alone
    assert alone[0] != alone[1], "the images must change the reply, or this test proves nothing"


@pytest.mark.parametrize("order", ["image first", "text first"])
def test_the_same_image_in_two_sessions_gives_the_same_reply(vision_engine, order):
    """Image ids are the same for the same bytes in any session; the state is each session's own."""
    image = png(48, 80, seed=3)
    messages = asking(image) if order == "image first" else [
        {"role": "user", "content": [{"type": "text", "text": "Look: "}, *asking(image)[0]["content"]]}]
    with vision_engine.open_session() as a, vision_engine.open_session() as b:
        first = token_ids(a.chat(messages, greedy(REPLY)))
        assert token_ids(b.chat(messages, greedy(REPLY))) == first
        assert a.tokens == b.tokens
