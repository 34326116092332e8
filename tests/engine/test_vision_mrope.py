"""M-RoPE images (Qwen2-VL's family) on llama.cpp: an image chunk takes fewer positions than tokens
(llama-cpp-python 0.3.16: one for all its cells), and the text after it goes on from there, not from
the token count (engine/backends/llamacpp_positions.py). Checked against llama.cpp's own mtmd helper
on a fresh context, and through everything that moves a session's cells: joint rounds beside text
sessions, a prompt fed in pieces, trims, shared prefixes, saved and parked states, the prompt cache."""

from __future__ import annotations

import json

import pytest

lc = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

from engine import image_part, image_prompt  # noqa: E402
from engine.images import is_image_id  # noqa: E402
from engine.models.gguf_file import read_metadata  # noqa: E402
from engine.prefix_cache import BLOCK  # noqa: E402
from tests.engine.helpers import token_ids  # noqa: E402
from tests.engine.images_helpers import asking, greedy, png  # noqa: E402
from tests.engine.mtmd_reference import mtmd_greedy  # noqa: E402

IMAGE = png(48, 80, seed=1)
"""3 × 5 merged patches: 15 tokens, one position; rows and columns differ."""
IMAGE_TOKENS = 15
QUESTION = ("Describe this picture in detail: its colours, its shapes and anything written in it, "
            "then say what it might be used for.")
REPLY = 12


def _messages(image: bytes = IMAGE, question: str = QUESTION) -> list[dict]:
    return asking(image, question)


def _where(worker, session_id: int) -> tuple[int, int, int]:
    """(tokens held, the next position, llama.cpp's last position + 1) of a session's sequence."""
    seq = worker.slots[session_id].state
    return seq.n_past, seq.position(), lc.llama_memory_seq_pos_max(worker.backend._mem, seq.id) + 1


def test_the_model_takes_images_and_they_take_fewer_positions_than_tokens(mrope_engine):
    backend = mrope_engine._worker.backend
    assert backend.vision is not None and backend.vision.mrope, backend.images_reason
    assert mrope_engine.takes_images
    with mrope_engine.open_session() as s:
        chunks = list(s.chat(_messages(), greedy(REPLY)))
        held, at, end = mrope_engine._call(lambda w: _where(w, s.id))
    assert sum(is_image_id(t) for t in s.tokens) == IMAGE_TOKENS
    assert held - at == IMAGE_TOKENS - 1 and end == at  # the text goes on right after the image's one position
    assert len([t for c in chunks for t in c.token_ids]) == REPLY


def test_text_after_an_image_is_where_llama_cpps_own_mtmd_helper_puts_it(mrope_engine, mrope_model):
    messages = _messages()
    with mrope_engine.open_session() as s:
        chunks = list(s.chat(messages, greedy(REPLY)))
        reply = [t for c in chunks for t in c.token_ids]
        prompt = list(s.tokens[:chunks[-1].stats.prompt_tokens])
    backend = mrope_engine._worker.backend
    flat, images = image_prompt.flatten(messages)
    text = mrope_engine._codec.render_traced(flat).text
    for marker in images.by_marker:
        text = text.replace(marker, "<__media__>")  # libmtmd's default marker
    ref = mtmd_greedy(mrope_model, text, IMAGE, REPLY, n_batch=backend._batch_size, n_ubatch=backend.n_ubatch,
                      threads=backend.threads)
    assert [None if is_image_id(t) else t for t in prompt] == ref.prompt, "not the same prompt: no reference"
    assert ref.n_past == len(prompt) - IMAGE_TOKENS + 1
    assert reply == ref.reply


def test_a_qwen2vl_gguf_gives_its_config_and_tokenizer_as_qwen2s(mrope_model, tmp_path):
    """transformers' GGUF reader does not know `qwen2vl`; its text model is Qwen2's (gguf_file.TEXT_ALIASES)."""
    meta = read_metadata(mrope_model, tmp_path / "meta")
    config = json.loads((meta / "config.json").read_text())
    assert (config["model_type"], config["hidden_size"], config["num_hidden_layers"]) == ("qwen2", 64, 2)
    assert not config["tie_word_embeddings"]
    assert (meta / "tokenizer_config.json").is_file() and not (meta / "text.gguf").exists()


def _reply_beside(engine, messages, neighbours: int) -> list[int]:
    others = [engine.open_session() for _ in range(neighbours)]
    streams = [s.chat([{"role": "user", "content": f"Tell me a story number {i}."}], greedy(20))
               for i, s in enumerate(others)]
    with engine.open_session() as session:
        got = token_ids(session.chat(messages, greedy(REPLY)))
    for stream, s in zip(streams, others):
        assert len(token_ids(stream)) == 20
        s.close()
    return got


def test_an_image_sessions_reply_is_the_same_alone_and_beside_text_sessions(mrope_engine):
    alone = _reply_beside(mrope_engine, _messages(), 0)
    assert len(alone) == REPLY
    for neighbours in (1, 3):
        assert _reply_beside(mrope_engine, _messages(), neighbours) == alone, f"beside {neighbours} text sessions"
    assert mrope_engine._worker.together.joint > 0


def test_the_prompt_fed_in_pieces_gives_the_same_tokens_as_in_one_call(mrope_engine, make_engine, mrope_model):
    with mrope_engine.open_session() as s:
        whole = token_ids(s.chat(_messages(), greedy(REPLY)))
    pieces = make_engine(mrope_model, "llamacpp", max_context=1024, prefill_chunk=4, speculative=False)
    backend = pieces._worker.backend
    fed: list[int] = []
    step = backend.step

    def counted(items, rows=None):
        fed.extend(len(tokens) for _, tokens in items)
        return step(items, rows)

    backend.step = counted
    with pieces.open_session() as s:
        assert token_ids(s.chat(_messages(), greedy(REPLY))) == whole
    assert max(fed) <= 4 and len(fed) > 8  # the text after the image went in several calls


def test_a_shorter_prompt_after_the_image_is_trimmed_back_to_the_right_position(mrope_engine):
    first, second = _messages(), _messages(question="What colour is it?")
    with mrope_engine.open_session() as s, mrope_engine.open_session() as ref:
        token_ids(s.chat(first, greedy(REPLY)))
        again = list(s.chat(first, greedy(REPLY)))  # the reply dropped, one prompt token computed again
        assert again[-1].stats.prefilled_tokens == 1
        other = list(s.chat(second, greedy(REPLY)))  # back to just after the image's text, then the new question
        image_end = max(i for i, t in enumerate(s.tokens) if is_image_id(t)) + 1
        assert other[-1].stats.prompt_tokens - other[-1].stats.prefilled_tokens > image_end
        assert [t for c in other for t in c.token_ids] == token_ids(ref.chat(second, greedy(REPLY)))
        assert [t for c in again for t in c.token_ids] == token_ids(ref.chat(first, greedy(REPLY)))


def test_a_session_sharing_an_image_prefix_goes_on_from_the_donors_position(mrope_engine):
    messages = _messages()
    with mrope_engine.open_session() as ref:
        alone = token_ids(ref.chat(messages, greedy(REPLY)))
    with mrope_engine.open_session() as donor, mrope_engine.open_session() as sharer:
        assert token_ids(donor.chat(messages, greedy(REPLY))) == alone
        chunks = list(sharer.chat(messages, greedy(REPLY)))
        shares = mrope_engine._call(lambda w: dict(w.backend.cells.shared.shares))
        held, at, end = mrope_engine._call(lambda w: _where(w, sharer.id))
    assert chunks[-1].stats.prefilled_tokens == 1 and shares, "the prompt was shared, not computed"
    assert [t for c in chunks for t in c.token_ids] == alone
    assert held - at == IMAGE_TOKENS - 1 and end == at


def _follow_up(messages: list[dict], reply: str) -> list[dict]:
    return messages + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And the colours?"}]


def _second_turn(session, messages, first: str) -> tuple[list[int], object]:
    chunks = list(session.chat(_follow_up(messages, first), greedy(REPLY)))
    return [t for c in chunks for t in c.token_ids], chunks[-1].stats


def _image_kept(stats, held: list[int]) -> None:
    """The turn computed only what follows the image: its state was reused, not decoded again."""
    assert stats.prompt_tokens - stats.prefilled_tokens > max(i for i, t in enumerate(held) if is_image_id(t))


def test_an_image_session_saved_and_restored_goes_on_as_if_it_never_left(mrope_engine, tmp_path):
    messages = _messages()
    with mrope_engine.open_session() as ref:
        want, _ = _second_turn(ref, messages, ref.chat(messages, greedy(REPLY)).reply().text)
    with mrope_engine.open_session() as s:
        first = s.chat(messages, greedy(REPLY)).reply().text
        held = s.tokens
        s.save_state(tmp_path / "image.state")
    with mrope_engine.open_session(restore_from=tmp_path / "image.state") as back:
        assert back.tokens == held
        got, stats = _second_turn(back, messages, first)
    assert got == want
    _image_kept(stats, held)


def test_a_parked_image_session_comes_back_with_the_same_next_tokens(mrope_engine):
    messages = _messages()
    with mrope_engine.open_session() as ref:
        want, _ = _second_turn(ref, messages, ref.chat(messages, greedy(REPLY)).reply().text)
    with mrope_engine.open_session() as s:
        first = s.chat(messages, greedy(REPLY)).reply().text
        held = s.tokens
        mrope_engine._call(lambda w: w.room.park(w.slots[s.id]))  # out of the pool, into a file
        assert mrope_engine._worker.slots[s.id].parked is not None
        got, stats = _second_turn(s, messages, first)
        assert mrope_engine._worker.slots[s.id].parked is None
    assert got == want
    _image_kept(stats, held)


LONG = "Here is what the team wrote about the picture below, one note after another. " * 12
MORE = "Now compare it with the notes above, point by point, and say which note fits it best and why. " * 16


def test_the_prompt_cache_keeps_the_text_around_an_image(make_engine, mrope_model, tmp_path):
    """Blocks that hold part of an M-RoPE image are not cached (llama.cpp cannot cut its cells apart by
    position); the text before it, and after it at its shifted positions, comes back after a restart."""
    messages = [{"role": "user", "content": [{"type": "text", "text": LONG}, image_part(IMAGE),
                                             {"type": "text", "text": QUESTION}]}]

    def turns(engine) -> tuple[list[list[int]], list, list[int]]:
        with engine.open_session() as s:
            first = list(s.chat(messages, greedy(REPLY)))
            text = "".join(c.text for c in first)
            more = messages + [{"role": "assistant", "content": text}, {"role": "user", "content": MORE}]
            second = list(s.chat(more, greedy(REPLY)))
            image = [i for i, t in enumerate(s.tokens) if is_image_id(t)]
        return ([[t for c in chunks for t in c.token_ids] for chunks in (first, second)],
                [first[-1].stats, second[-1].stats], image)

    folder = str(tmp_path / "cache")
    want, computed, image = turns(make_engine(mrope_model, "llamacpp", max_context=2048, prefix_cache_dir=folder))
    assert BLOCK < image[0] and image[-1] < 2 * BLOCK < computed[0].prompt_tokens, "the image in the second block"
    assert computed[1].prompt_tokens > 5 * BLOCK
    got, read, _ = turns(make_engine(mrope_model, "llamacpp", max_context=2048, prefix_cache_dir=folder))
    assert got == want
    assert read[0].prefilled_tokens == read[0].prompt_tokens - BLOCK, "the first block read back, not the image's"
    assert read[1].prefilled_tokens < BLOCK, "the blocks after the image read back, at their positions"
