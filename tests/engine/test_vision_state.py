"""An image session's state: saved and restored, parked and brought back, it goes on with the tokens
it would have had; the same image sent again reuses the cached prefix, another image does not."""

from __future__ import annotations

from engine.images import is_image_id
from tests.engine.helpers import token_ids
from tests.engine.images_helpers import asking, greedy, png

IMAGE = png(64, 64, seed=1)


def _follow_up(messages: list[dict], reply: str) -> list[dict]:
    return messages + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And the colours?"}]


def _turns(session, messages):
    """First reply's text, then the next turn's token ids and stats."""
    first = session.chat(messages, greedy(12)).reply().text
    chunks = list(session.chat(_follow_up(messages, first), greedy(12)))
    return [t for c in chunks for t in c.token_ids], chunks[-1].stats


def test_an_image_session_saved_and_restored_goes_on_as_if_it_never_left(vision_engine, tmp_path):
    messages = asking(IMAGE)
    with vision_engine.open_session() as ref:
        want, _ = _turns(ref, messages)
    with vision_engine.open_session() as s:
        first = s.chat(messages, greedy(12)).reply().text
        held = s.tokens
        s.save_state(tmp_path / "image.state")
    assert any(is_image_id(t) for t in held)
    with vision_engine.open_session(restore_from=tmp_path / "image.state") as back:
        assert back.tokens == held
        chunks = list(back.chat(_follow_up(messages, first), greedy(12)))
    assert [t for c in chunks for t in c.token_ids] == want
    _image_kept(chunks[-1].stats, held)


def _image_kept(stats, held: list[int]) -> None:
    """The turn computed only what follows the image: its state was reused, not decoded again."""
    last_image = max(i for i, t in enumerate(held) if is_image_id(t))
    assert stats.prompt_tokens - stats.prefilled_tokens > last_image


def test_a_parked_image_session_comes_back_with_the_same_next_tokens(vision_engine):
    messages = asking(IMAGE)
    with vision_engine.open_session() as ref:
        want, _ = _turns(ref, messages)
    with vision_engine.open_session() as s:
        first = s.chat(messages, greedy(12)).reply().text
        held = s.tokens
        vision_engine._call(lambda w: w.room.park(w.slots[s.id]))  # out of the pool, into a file
        assert vision_engine._worker.slots[s.id].parked is not None
        chunks = list(s.chat(_follow_up(messages, first), greedy(12)))
        assert vision_engine._worker.slots[s.id].parked is None
    assert [t for c in chunks for t in c.token_ids] == want
    _image_kept(chunks[-1].stats, held)


def test_the_same_image_again_reuses_the_cached_prefix_and_another_does_not(vision_engine):
    with vision_engine.open_session() as s:
        first = list(s.chat(asking(IMAGE), greedy(8)))
        prompt = first[-1].stats.prompt_tokens
        assert first[-1].stats.prefilled_tokens == prompt
        # the same picture and question, the reply dropped: only the last prompt token is computed again
        again = list(s.chat(asking(IMAGE), greedy(8)))
        assert again[-1].stats.prefilled_tokens == 1
        assert [t for c in again for t in c.token_ids] == [t for c in first for t in c.token_ids]
        # another picture of the same size: the shared prefix ends where the image begins
        other = list(s.chat(asking(png(64, 64, seed=2)), greedy(8)))
        image_at = next(i for i, t in enumerate(s.tokens) if is_image_id(t))
        assert other[-1].stats.prefilled_tokens == prompt - image_at


def test_a_second_turn_with_a_new_image_prefills_only_what_is_new(vision_engine):
    messages = asking(IMAGE)
    with vision_engine.open_session() as s, vision_engine.open_session() as ref:
        reply = s.chat(messages, greedy(10)).reply().text
        more = messages + [{"role": "assistant", "content": reply}, *asking(png(32, 32, seed=5), "And this one?")]
        chunks = list(s.chat(more, greedy(10)))
        held = len(s.tokens) - 10 - chunks[-1].stats.prefilled_tokens
        assert held > 16  # the first image and its turn stayed
        assert [t for c in chunks for t in c.token_ids] == token_ids(ref.chat(more, greedy(10)))
