"""A conversation's library in the store: passages and vectors survive a restart byte for byte,
removing a document removes its passages (and its words from the index) but not what replies read,
re-indexing replaces a document's passages whole, words are found by FTS5 in this conversation only,
and a document left half-indexed by a quit says so at the next start."""

from __future__ import annotations

import numpy as np
import pytest

from app.store import ChunkRow, InvalidValueError, Source, open_store

EMBEDDER = "bundled:all-minilm-l6-v2"


def unit_vectors(n: int, seed: int, dims: int = 384) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def fill(store, document, texts: list[str], seed: int = 0):
    chunks = [ChunkRow(t, page=i + 1, last_page=i + 1, headings=("Manual", f"Part {i}"), tokens=len(t.split()))
              for i, t in enumerate(texts)]
    return store.library.fill(document.id, chunks, unit_vectors(len(chunks), seed), content_hash="h" * 64,
                              embedder=EMBEDDER, media_type="application/pdf", size=1234, modified=1.5)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def store(home):
    s = open_store(home).store
    yield s
    s.close()


def test_vectors_and_passages_survive_a_restart_byte_exactly(home):
    store = open_store(home).store
    c = store.create_conversation("Manuals")
    doc = store.library.add(c.id, "/docs/manual.pdf", "manual.pdf", "application/pdf", 1234)
    fill(store, doc, ["The pump starts.", "The filter is cleaned weekly.", "Calibrate the flow sensor."], seed=7)
    ids, before = store.library.matrix(c.id, EMBEDDER)
    store.close()

    again = open_store(home).store
    ids2, after = again.library.matrix(c.id, EMBEDDER)
    assert ids.tolist() == ids2.tolist() and after.dtype == np.float32
    assert after.tobytes() == before.tobytes() == unit_vectors(3, 7).tobytes()
    [document] = again.library.documents(c.id)
    assert (document.name, document.status, document.chunks, document.content_hash) == ("manual.pdf", "ready", 3, "h" * 64)
    passages = again.library.passages(ids2[::-1])
    assert [p.text for p in passages] == ["Calibrate the flow sensor.", "The filter is cleaned weekly.", "The pump starts."]
    assert passages[0].location == "p. 3, §Part 2"
    again.close()


def test_removing_a_document_removes_its_passages_and_words_but_not_what_replies_read(store):
    c = store.create_conversation()
    keep = store.library.add(c.id, "/a.md", "a.md")
    drop = store.library.add(c.id, "/b.md", "b.md")
    fill(store, keep, ["Apples grow on trees."])
    fill(store, drop, ["Zebras live in Africa.", "Zebras have stripes."])
    store.append_message(c.id, "user", "zebras?")
    reply = store.append_message(c.id, "assistant", "Stripes.")
    passage = store.library.passages([store.library.word_ranking(c.id, "zebras")[0][0]])[0]
    store.library.add_sources(reply.id, [Source.of(passage, 0.03)])

    store.library.remove([drop.id])
    assert [d.name for d in store.library.documents(c.id)] == ["a.md"]
    assert store.db.execute("select count(*) from library_chunks").fetchone()[0] == 1
    assert store.library.word_ranking(c.id, "zebras") == []
    assert len(store.library.matrix(c.id, EMBEDDER)[0]) == 1  # the cached matrix was read again
    [source] = store.messages(c.id)[-1].sources
    assert (source.label, source.text, source.chunk_id) == (f"b.md {passage.location}", passage.text, None)


def test_reindexing_replaces_the_passages_whole(store):
    c = store.create_conversation()
    doc = store.library.add(c.id, "/a.md", "a.md")
    fill(store, doc, ["old one", "old two", "old three"])
    fill(store, doc, ["new text"], seed=3)
    texts = [r[0] for r in store.db.execute("select text from library_chunks")]
    assert texts == ["new text"] and store.library.get(doc.id).chunks == 1
    assert store.library.word_ranking(c.id, "old") == []
    with pytest.raises(InvalidValueError, match="2 chunks need as many vectors"):
        store.library.fill(doc.id, [ChunkRow("a"), ChunkRow("b")], unit_vectors(3, 0), content_hash="x",
                           embedder=EMBEDDER, media_type="text/plain", size=1, modified=0.0)
    assert [r[0] for r in store.db.execute("select text from library_chunks")] == ["new text"]


def test_adding_a_file_again_gives_the_same_document(store):
    c = store.create_conversation()
    first = store.library.add(c.id, "/a.md", "a.md")
    assert store.library.add(c.id, "/a.md", "a.md").id == first.id
    assert len(store.library.documents(c.id)) == 1


def test_words_are_found_in_this_conversation_only_and_any_text_is_accepted(store):
    mine, other = store.create_conversation(), store.create_conversation()
    fill(store, store.library.add(mine.id, "/m.md", "m.md"), ["Error E_4471 means the valve is stuck.", "Nothing."])
    fill(store, store.library.add(other.id, "/o.md", "o.md"), ["Error E_4471 elsewhere."])
    hits = store.library.word_ranking(mine.id, "what does E_4471 mean?")
    assert len(hits) == 1 and hits[0][1] > 0
    assert store.library.passages([hits[0][0]])[0].name == "m.md"
    for odd in ('"unterminated', "NEAR(a b)", "*", "", "a OR", "valve) AND (x"):
        store.library.word_ranking(mine.id, odd)  # no FTS5 syntax error
    assert store.library.word_ranking(mine.id, "valves")  # porter stemming: valves → valve


def test_passages_stay_searchable_while_re_indexed_and_another_model_s_are_not(store):
    c = store.create_conversation()
    waiting = store.library.add(c.id, "/new.md", "new.md")
    assert not store.library.searchable(c.id) and len(store.library.matrix(c.id, EMBEDDER)[0]) == 0
    doc = store.library.add(c.id, "/a.md", "a.md")
    fill(store, doc, ["The valve is stuck."])
    store.library.set_status(doc.id, "indexing")  # re-indexed: the last index serves until replaced
    assert store.library.searchable(c.id) and store.library.word_ranking(c.id, "valve")
    assert len(store.library.matrix(c.id, EMBEDDER)[0]) == 1
    assert len(store.library.matrix(c.id, "another-model")[0]) == 0
    assert store.library.get(waiting.id).status == "indexing"


def test_a_document_left_indexing_by_a_quit_is_marked_interrupted_at_the_next_start(home):
    store = open_store(home).store
    c = store.create_conversation()
    store.library.add(c.id, "/big.pdf", "big.pdf")
    store.close()
    again = open_store(home).store
    assert again.library.documents(c.id)[0].status == "interrupted"
    again.close()


def test_deleting_the_conversation_deletes_its_library(store):
    c = store.create_conversation()
    fill(store, store.library.add(c.id, "/a.md", "a.md"), ["text"])
    store.delete_conversation(c.id)
    assert [store.db.execute(f"select count(*) from {t}").fetchone()[0]
            for t in ("library_documents", "library_chunks", "library_chunks_fts")] == [0, 0, 0]


def test_a_reply_s_sources_go_with_its_export_and_come_back_with_an_import(store):
    from app.store import export_json, export_markdown, import_json

    c = store.create_conversation("Pumps")
    store.append_message(c.id, "user", "How?")
    reply = store.append_message(c.id, "assistant", "Like this.")
    store.library.add_sources(reply.id, [Source("manual.pdf", "p. 40, §Calibration", "Hold the button.", None, 0.03)])
    assert "*Sources: [1] manual.pdf p. 40, §Calibration*" in export_markdown(store, c.id)
    copy = import_json(store, export_json(store, c.id))
    [source] = store.messages(copy.id)[-1].sources
    assert (source.label, source.text, source.chunk_id) == ("manual.pdf p. 40, §Calibration", "Hold the button.", None)
