"""What a library takes and how each bad input is answered, in words: an empty file, a binary one,
a PDF with no text layer, a folder with nothing to read or too many files; text in another encoding
is read; an unchanged file is not embedded again; a cancel stops between batches; passages keep
code blocks and tables whole and carry their headings."""

from __future__ import annotations

import threading

import pytest

from app.library import reading
from app.library.indexing import EMBED_BATCH, embed, index_document, segments
from app.library.reading import ReadCancelled, UnreadableFileError, folder_files, read_document
from tests.app.library_fixtures import embedder, write_pdf  # noqa: F401 (fixture)

CODE = "```python\n" + "\n".join(f"def step_{i}(x):\n    return x + {i}\n" for i in range(10)) + "```"
TABLE = "\n".join(["| option | meaning |", "|---|---|", *[f"| opt{i} | does thing number {i} |" for i in range(8)]])


def _scan(path):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QPainter, QPdfWriter

    writer = QPdfWriter(str(path))
    painter = QPainter(writer)  # a picture and no text, like a scanned page
    painter.fillRect(100, 100, 2000, 1000, Qt.GlobalColor.darkGray)
    painter.end()


@pytest.mark.parametrize("name, data, message", [
    ("empty.txt", b"", "empty.txt is empty: there is no text to index."),
    ("blank.md", b"\n\n   \n", "blank.md is empty: there is no text to index."),
    ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
     "photo.png is not a text file (it holds binary data); a library reads text, code, Markdown, CSV, JSON "
     "and PDF files."),
    ("gone.md", None, "gone.md was not found (it may have been moved or deleted)."),
])
def test_each_bad_file_is_refused_in_words(tmp_path, name, data, message):
    path = tmp_path / name
    if data is not None:
        path.write_bytes(data)
    with pytest.raises(UnreadableFileError) as e:
        read_document(path)
    assert str(e.value) == message


def test_a_pdf_with_no_text_layer_is_refused_in_words(qapp, tmp_path):
    _scan(tmp_path / "scan.pdf")
    with pytest.raises(UnreadableFileError) as e:
        read_document(tmp_path / "scan.pdf")
    assert str(e.value) == "scan.pdf has no text to read (its pages may be scanned images)."


def test_text_that_is_not_utf8_is_read_in_its_encoding(tmp_path):
    path = tmp_path / "old.txt"
    path.write_bytes("Le café est prêt à midi.\n".encode("cp1252"))
    assert read_document(path).text == "Le café est prêt à midi.\n"


def test_a_pdf_is_read_page_by_page(qapp, tmp_path):
    document = read_document(write_pdf(tmp_path / "two.pdf", ["First page text.", "Second page text."]))
    assert [p.splitlines()[0] for p in document.pages] == ["First page text.", "Second page text."]


def test_a_folder_adds_its_readable_files_and_passes_over_the_rest(tmp_path):
    for name in ("a.md", "b/c.py", "b/d.pdf", ".hidden/e.md", "b/.f.md", "g.png", "node_modules/h.js", "i.zip"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    files, skipped = folder_files(tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["a.md", "b/c.py", "b/d.pdf"]
    assert skipped == 3  # .f.md, g.png, i.zip (hidden and tool folders are not walked at all)


@pytest.mark.parametrize("files, message", [
    (["photo.png", "song.mp3"], "{name} holds no files a library reads (text, code, Markdown, CSV, JSON and PDF files)."),
    ([f"n{i}.txt" for i in range(12)], "{name} holds more than 10 files a library reads; add the folders in it "
                                       "you need one at a time."),
])
def test_a_folder_with_nothing_to_read_or_too_many_files_is_refused_in_words(tmp_path, monkeypatch, files, message):
    monkeypatch.setattr(reading, "MAX_FOLDER_FILES", 10)
    folder = tmp_path / "stuff"
    folder.mkdir()
    for name in files:
        (folder / name).write_text("x")
    with pytest.raises(UnreadableFileError) as e:
        folder_files(folder)
    assert str(e.value) == message.format(name="stuff")


def test_ten_thousand_files_are_refused_before_any_is_read(tmp_path):
    folder = tmp_path / "home"
    folder.mkdir()
    for i in range(10_000):
        (folder / f"note{i}.txt").write_bytes(b"x")
    with pytest.raises(UnreadableFileError, match="home holds more than 5,000 files a library reads"):
        folder_files(folder)


def test_long_text_is_cut_in_stretches_before_headings_and_nothing_is_lost():
    text = "".join(f"# Part {i}\n\n" + "A sentence of the part. " * 400 + "\n\n" for i in range(40))
    stretches = list(segments(text, 20_000))
    assert "".join(stretches) == text and len(stretches) > 5
    assert all(s.startswith("# Part") for s in stretches)


def test_passages_keep_code_and_tables_whole_and_carry_their_headings(tmp_path, embedder):
    path = tmp_path / "guide.md"
    path.write_text("# Guide\n\nIntro words.\n\n## Install\n\n" + CODE + "\n\n## Options\n\n" + TABLE + "\n")
    indexed = index_document(path, embedder.get())
    bodies = [c.text for c in indexed.chunks]
    assert sum(CODE in b for b in bodies) == 1 and sum(TABLE in b for b in bodies) == 1
    assert [c.headings for c in indexed.chunks if CODE in c.text] == [("Guide", "Install")]
    assert indexed.vectors.shape == (len(bodies), 384) and indexed.vectors.dtype.name == "float32"


def test_an_unchanged_file_is_not_embedded_again_and_a_changed_one_is(tmp_path, embedder):
    path = tmp_path / "notes.md"
    path.write_text("Some notes about pumps.\n")
    first = index_document(path, embedder.get())
    assert index_document(path, embedder.get(), known_hash=first.content_hash) is None
    path.write_text("Some notes about valves.\n")
    assert index_document(path, embedder.get(), known_hash=first.content_hash).chunks[0].text == "Some notes about valves."


def test_a_cancel_stops_between_batches(tmp_path, embedder):
    path = tmp_path / "long.md"
    path.write_text("\n\n".join(f"## Section {i}\n\nPumps and valves, part {i}." for i in range(3 * EMBED_BATCH)))
    cancel = threading.Event()
    seen = []

    def progress(stage, fraction):
        seen.append(stage)
        if stage == "embedding":
            cancel.set()  # after the first batch

    with pytest.raises(ReadCancelled):
        index_document(path, embedder.get(), cancelled=cancel.is_set, progress=progress)
    assert seen.count("embedding") == 1


def test_a_documents_passages_are_embedded_longest_first_and_come_back_in_order():
    """A call's passages are padded to its longest: in a document's own order a quarter of the
    compute went to padding, so calls take passages of like length (and the vectors keep their order)."""
    import random

    import numpy as np

    class Recorder:
        dimensions = 2
        calls: list[list[str]] = []

        def embed(self, texts, truncate=False):
            self.calls.append(list(texts))
            return type("R", (), {"vectors": np.array([[len(t), 0] for t in texts], dtype=np.float32)})()

    rng = random.Random(3)
    texts = ["w" * rng.randint(1, 400) + str(i) for i in range(3 * EMBED_BATCH + 5)]
    recorder = Recorder()
    vectors = embed(texts, recorder, lengths=[len(t) for t in texts])
    assert vectors[:, 0].tolist() == [len(t) for t in texts]  # each passage's own vector, in order
    widths = [[len(t) for t in call] for call in recorder.calls]
    assert [len(w) for w in widths] == [EMBED_BATCH] * 3 + [5]
    assert all(min(a) >= max(b) for a, b in zip(widths, widths[1:]))  # longest first, call by call
