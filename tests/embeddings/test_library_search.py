"""The pieces together, as the app's library will use them: a 60-page document chunked by page,
embedded, indexed for words, and a question whose answer is on page 40 finds page 40 among the
first five sources."""

from __future__ import annotations

from pydoc_data.topics import topics

from engine.retrieval import BM25, chunk_pages, hybrid

ANSWER = ("Calibration. To recalibrate the flow sensor, hold the service button for ten seconds until the "
          "amber light blinks twice, then pour exactly one litre of water through the inlet.")


def sixty_pages() -> list[str]:
    """Real prose nobody here wrote (the language reference), one topic's opening a page, and the
    answer on page 40."""
    names = sorted(topics)
    pages = [topics[names[i % len(names)]][:1500] for i in range(60)]
    pages[39] = pages[39][:600] + "\n\n" + ANSWER + "\n\n" + pages[39][600:]
    return pages


def test_the_answer_on_page_40_is_among_the_first_sources(embedder):
    count = lambda text: embedder.count_tokens([text])[0]  # noqa: E731
    chunks = chunk_pages(sixty_pages(), max_tokens=embedder.window, overlap=32, count=count)
    vectors = embedder.embed([c.text for c in chunks]).vectors
    words = BM25([c.text for c in chunks])
    question = "How do I reset the water sensor's measurement so it reads correctly again?"
    hits = hybrid(embedder.embed([question]).vectors[0], vectors, words.scores(question), top=5)
    pages = [(chunks[h.index].page, chunks[h.index].last_page) for h in hits]
    assert any(first <= 40 <= last for first, last in pages), pages
    assert all(c.tokens <= embedder.window for c in chunks)
