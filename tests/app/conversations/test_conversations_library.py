"""A turn in a conversation with a library: the passages that answer the question are read with it
and stored as the reply's sources (a 60-page PDF's page 40 among them), within the context under the
conversation's policy; "more passages" reads more; a library that cannot be searched is said on the
reply, which still comes."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager, chat_messages
from app.conversations.sources import MORE, NOT_SEARCHED, TOP, sources_block, with_sources
from app.library.indexing import index_document, stored
from app.store import Source
from engine import ModelLoadError
from tests.app.engine_fixtures import GREEDY, make_engine  # noqa: F401 (fixture)
from tests.app.library_fixtures import QUESTION, embedder, manual_pdf  # noqa: F401 (fixtures)

CONTEXT = 4096


@pytest.fixture(scope="module")
def indexed(manual_pdf, embedder):
    """The PDF cut and embedded once for the module (the slow part: about a hundred passages)."""
    return index_document(manual_pdf, embedder.get())


@pytest.fixture
def manager(make_engine, tiny_models, store, embedder):
    m = ConversationManager(make_engine(tiny_models["llama"], "torch", max_context=CONTEXT), store)
    m.embedder_for = embedder.get
    yield m
    m.close()


def with_manual(store, indexed, embedder, **settings):
    c = store.create_conversation("Sensor", **settings)
    doc = store.library.add(c.id, "/docs/manual.pdf", "manual.pdf", "application/pdf")
    stored(store, doc.id, indexed, embedder.get().source)
    return c


def pages_of(sources) -> list[str]:
    return [s.location for s in sources]


def test_the_answer_on_page_40_is_among_the_reply_s_sources(manager, store, indexed, embedder):
    assert len(indexed.document.pages) == 60
    c = with_manual(store, indexed, embedder)
    chunks = list(manager.reply(c.id, QUESTION, GREEDY))
    reply = store.messages(c.id)[-1]
    assert reply.status == "complete" and 0 < len(reply.sources) <= TOP
    pages = [(s.chunk_id, s.location) for s in reply.sources]
    on_40 = [s for s in reply.sources if s.location.startswith(("p. 40", "pp. 40", "pp. 39–40"))]
    assert on_40 and "recalibrate the flow sensor" in " ".join(s.text for s in on_40), pages
    assert all(s.label.startswith("manual.pdf p") for s in reply.sources)
    # the model read them: the prompt holds the passages' block
    block = manager.engine.count_tokens(sources_block(list(reply.sources)))
    assert chunks[-1].stats.prompt_tokens > block
    assert store.messages(c.id)[-2].content == QUESTION  # the stored question is the user's own text


def test_more_passages_reads_more_and_stays_within_the_context(manager, store, indexed, embedder):
    c = with_manual(store, indexed, embedder)
    list(manager.reply(c.id, QUESTION, GREEDY))
    first = store.messages(c.id)[-1].sources
    question = store.messages(c.id)[-2].id
    chunks = list(manager.reply(c.id, None, GREEDY, parent_id=question, passages=MORE))
    again = store.messages(c.id)[-1]
    assert again.version == 2 and len(first) < len(again.sources) <= MORE
    assert [s.chunk_id for s in again.sources[:len(first)]] == [s.chunk_id for s in first]
    assert chunks[-1].stats.prompt_tokens + GREEDY.max_tokens <= CONTEXT


def test_a_conversation_that_refuses_to_cut_reads_only_what_its_history_leaves_room_for(
        manager, store, indexed, embedder):
    c = with_manual(store, indexed, embedder)
    store.append_message(c.id, "user", "Hello.")
    while len(manager.engine.chat_tokens(chat_messages(store, c.id))) < CONTEXT - 700:  # most of the context
        store.append_message(c.id, "user", "the pump hums along quietly " * 40)
        store.append_message(c.id, "assistant", "Noted.")
    chunks = list(manager.reply(c.id, QUESTION, GREEDY))
    reply = store.messages(c.id)[-1]
    assert reply.status == "complete" and 0 < len(reply.sources) < TOP
    assert chunks[-1].stats.prompt_tokens + GREEDY.max_tokens <= CONTEXT


def test_a_library_that_cannot_be_searched_is_said_on_the_reply(manager, store, indexed, embedder):
    c = with_manual(store, indexed, embedder)

    def missing():
        raise ModelLoadError("embedding model not found: /gone does not exist")

    manager.embedder_for = missing
    list(manager.reply(c.id, QUESTION, GREEDY))
    reply = store.messages(c.id)[-1]
    assert reply.status == "complete" and reply.sources == ()
    assert reply.notice == NOT_SEARCHED.format(why="embedding model not found: /gone does not exist")


def test_a_conversation_without_a_library_reads_no_passages(manager, store):
    c = store.create_conversation()
    list(manager.reply(c.id, QUESTION, GREEDY))
    assert store.messages(c.id)[-1].sources == () and store.messages(c.id)[-1].notice == ""


def test_passages_go_before_the_last_question_only():
    sources = [Source("a.md", "§Intro", "Alpha text."), Source("b.pdf", "p. 2", "Beta text.")]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Old question"},
                {"role": "assistant", "content": "Old answer"},
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}},
                                             {"type": "text", "text": "New question"}]}]
    out = with_sources(messages, sources)
    assert out[:3] == messages[:3] and messages[3]["content"][1]["text"] == "New question"
    image, text = out[3]["content"]
    assert image["type"] == "image_url" and text["text"].endswith("</sources>\n\nNew question")
    assert '<source n="1" from="a.md §Intro">\nAlpha text.\n</source>' in text["text"]
    assert '<source n="2" from="b.pdf p. 2">' in text["text"]
    assert with_sources(messages, []) is messages
