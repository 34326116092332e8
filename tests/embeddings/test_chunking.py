"""Structure-aware chunking: code blocks and tables kept whole, headings heading their chunks,
nothing lost, overlap between neighbours, pages kept, every chunk within its token budget."""

from __future__ import annotations

import random
import re

import pytest

from engine.retrieval import chunk_pages, chunk_text, estimate_tokens
from engine.retrieval.blocks import parse

CODE = "```python\n" + "\n".join(f"def step_{i}(x):\n    return x + {i}\n" for i in range(12)) + "```"
TABLE = "\n".join(["| option | meaning |", "|---|---|", *[f"| opt{i} | does thing number {i} |" for i in range(8)]])
GRID = "+------+-------+\n| a    | b     |\n+======+=======+\n| 1    | 2     |\n+------+-------+"


def words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    vocab = "the engine reads a long manual while every chapter explains one feature in detail".split()
    sentences = []
    for _ in range(n):
        sentences.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(6, 14))).capitalize() + ".")
    return " ".join(sentences)


def document() -> str:
    return "\n\n".join([
        "# Manual", words(8, 1), "## Install", words(10, 2), CODE, words(6, 3),
        "## Options", words(5, 4), TABLE, words(12, 5), "### Details", words(30, 6), GRID,
    ])


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_blocks_are_read_by_kind():
    kinds = [b.kind for b in parse(document())]
    assert kinds.count("code") == 1 and kinds.count("table") == 2 and kinds.count("heading") == 4
    titled = parse("The with statement\n******************\n\nText here.\n\nSub part\n--------\n\nMore.")
    assert [(b.kind, b.level) for b in titled if b.kind == "heading"] == [("heading", 1), ("heading", 2)]


def test_code_blocks_and_tables_are_kept_whole():
    chunks = chunk_text(document(), max_tokens=120, overlap=16)
    for whole in (CODE, TABLE, GRID):
        assert sum(whole in c.body for c in chunks) >= 1, whole[:30]
        # and no chunk holds a part of it without the rest
        first_line = whole.splitlines()[1]
        assert all(whole in c.body for c in chunks if first_line in c.body)


def test_indented_code_after_a_colon_is_a_code_block():
    text = "The following code:\n\n   with A() as a:\n       SUITE\n\n   more = 1\n\nis equivalent."
    assert [b.kind for b in parse(text)] == ["paragraph", "code", "paragraph"]


def test_every_chunk_within_budget_and_nothing_lost():
    text = document()
    chunks = chunk_text(text, max_tokens=100, overlap=16)
    assert all(c.tokens <= 100 for c in chunks if "```" not in c.body and "|" not in c.body)
    joined = norm(" ".join(c.body for c in chunks))
    for sentence in re.split(r"(?<=\.)\s+", words(30, 6)):
        assert norm(sentence) in joined


def test_headings_head_their_chunks():
    chunks = chunk_text(document(), max_tokens=120, overlap=16)
    details = [c for c in chunks if c.headings[-1:] == ("Details",)]
    assert details and all(c.headings == ("Manual", "Options", "Details") for c in details)
    assert all(c.text.startswith("Manual › Options › Details\n\n") for c in details)
    assert not any("Install" in c.headings for c in details)


def test_neighbours_in_a_section_overlap():
    chunks = [c for c in chunk_text(document(), max_tokens=80, overlap=24) if c.headings[-1:] == ("Details",)]
    assert len(chunks) >= 3
    for a, b in zip(chunks, chunks[1:]):
        tail = norm(a.body)[-40:]
        first_sentence = norm(b.body).split(". ")[0]
        assert first_sentence in norm(a.body) or tail in norm(b.body)


def test_offsets_point_into_the_document():
    text = document()
    for c in chunk_text(text, max_tokens=120, overlap=0):
        assert norm(text[c.start:c.start + 60])[:20] == norm(c.body)[:20]


def test_pages_are_kept():
    pages = [f"Page {n} text. " + words(3, n) for n in range(1, 61)]
    pages[39] = "The answer to the calibration question is 42 turns of the knob."
    chunks = chunk_pages(pages, max_tokens=64, overlap=8)
    found = [c for c in chunks if "calibration question" in c.body]
    assert found and found[0].page <= 40 <= found[0].last_page
    assert chunks[0].page == 1 and chunks[-1].last_page == 60


def test_an_oversized_code_block_is_cut_at_line_ends_only():
    code = "```\n" + "\n".join(f"line_{i} = compute({i}, {i + 1}, {i + 2})" for i in range(200)) + "\n```"
    chunks = chunk_text(code, max_tokens=64, overlap=0)
    assert len(chunks) > 3
    lines = {f"line_{i} = compute({i}, {i + 1}, {i + 2})" for i in range(200)}
    seen = {line for c in chunks for line in c.body.splitlines() if line.startswith("line_")}
    assert seen == lines  # every line whole, none cut in the middle


@pytest.mark.parametrize("max_tokens, overlap", [(8, 0), (100, 50), (100, -1)])
def test_bad_budgets_refused(max_tokens, overlap):
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_text("text", max_tokens=max_tokens, overlap=overlap)


def test_empty_and_blank_text_give_no_chunks():
    assert chunk_text("") == [] and chunk_text("\n\n   \n") == []
    assert estimate_tokens("one two three") == 4


def test_a_word_or_line_longer_than_a_chunk_is_sliced_not_dropped():
    blob = "".join(chr(ord("a") + (i * 7) % 26) for i in range(5000))  # no spaces: one "word"
    count = lambda text: len(text) // 4 + 1  # noqa: E731 - a counter in which long words cost tokens
    for text in (f"Before. {blob} after.", f"```\n{blob}\nshort line\n```"):
        chunks = chunk_text(text, max_tokens=64, overlap=0, count=count)
        assert all(c.tokens <= 64 for c in chunks)
        assert blob in "".join(c.body.replace("\n", "").replace("```", "").replace(" ", "") for c in chunks)


def test_vectors_of_the_same_inputs_are_byte_identical_across_loads():
    from engine.embeddings import Embedder

    texts = ["a passage to index", "another, longer passage to index in the same batch"]
    with Embedder() as first:
        a = first.embed(texts).vectors
    with Embedder() as second:
        b = second.embed(texts).vectors
    assert a.tobytes() == b.tobytes()  # a stored vector and a re-embedded one compare exactly
