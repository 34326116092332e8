"""Reading files to attach, off the GUI thread: text in its encoding, PDF text through PDFium,
binary refused, progress reported, cancelled between blocks, memory bounded for huge files, and
the part that fits cut at a line break."""

from __future__ import annotations

import threading

import pytest

from app.chat import attachment_reader
from app.chat.attachment_reader import ReadCancelled, UnreadableFileError, read_file


def _pdf(path, pages_text: list[str]) -> None:
    """A real PDF with a text layer, written by Qt (no extra dependency)."""
    from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument

    doc = QTextDocument()
    doc.setHtml("".join(f"<p style='page-break-after: always'>{t}</p>" for t in pages_text))
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A5))
    doc.print_(writer)


@pytest.mark.parametrize("data, text", [
    ("naïve café\n".encode("utf-8"), "naïve café\n"),
    (b"\xef\xbb\xbfwith a BOM\r\nline two\r\n", "with a BOM\nline two\n"),
    ("utf-16 text\n".encode("utf-16"), "utf-16 text\n"),
    (b"caf\xe9 au lait\n", "café au lait\n"),  # Windows-1252, as old editors saved it
])
def test_text_is_read_in_its_encoding(tmp_path, data, text):
    path = tmp_path / "notes.txt"
    path.write_bytes(data)
    read = read_file(path)
    assert (read.text, read.media_type, read.size) == (text, "text/plain", len(data))


@pytest.mark.parametrize("name, media_type", [("a.md", "text/markdown"), ("a.csv", "text/csv"),
                                              ("a.json", "application/json"), ("a.py", "text/x-python"),
                                              ("Makefile", "text/plain"), ("a.ts", "text/x-typescript"),
                                              ("a.weird", "text/plain")])
def test_the_media_type_follows_the_name(tmp_path, name, media_type):
    (tmp_path / name).write_text("x = 1\n")
    assert read_file(tmp_path / name).media_type == media_type


def test_a_pdf_gives_its_text_page_by_page(qapp, tmp_path):
    path = tmp_path / "minutes.pdf"
    _pdf(path, ["The council met on Tuesday.", "Levees were approved."])
    progress = []
    read = read_file(path, progress=progress.append, keep_bytes=True)
    assert read.media_type == "application/pdf" and read.data == path.read_bytes()
    assert "The council met on Tuesday." in read.text and "Levees were approved." in read.text
    assert read.text.index("Tuesday") < read.text.index("Levees") and "\r" not in read.text
    assert progress == sorted(progress) and progress[-1] == pytest.approx(1.0)


def test_a_pdf_without_text_is_refused(qapp, tmp_path):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QPainter, QPdfWriter

    path = tmp_path / "scan.pdf"
    writer = QPdfWriter(str(path))
    painter = QPainter(writer)  # a page with a picture on it and no text, like a scan
    painter.fillRect(100, 100, 2000, 1000, Qt.GlobalColor.darkGray)
    painter.end()
    with pytest.raises(UnreadableFileError) as e:
        read_file(path)
    assert str(e.value) == "scan.pdf has no text to read (its pages may be scanned images)."


def test_binary_data_after_a_text_start_is_still_refused(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"a" * (attachment_reader.BLOCK + 10) + b"\x00\x01\x02")
    with pytest.raises(UnreadableFileError, match="mixed.txt is not a text file"):
        read_file(path)


def test_progress_is_reported_per_block_and_a_cancel_stops_the_read(tmp_path):
    path = tmp_path / "big.log"
    path.write_bytes(b"0123456789abcde\n" * (3 * attachment_reader.BLOCK // 16))
    progress = []
    read = read_file(path, progress=progress.append)
    assert progress == [1 / 3, 2 / 3, 1.0] and read.chars == path.stat().st_size
    stop = threading.Event()
    seen = []

    def cancel_after_first(fraction):
        seen.append(fraction)
        stop.set()

    with pytest.raises(ReadCancelled):
        read_file(path, progress=cancel_after_first, cancelled=stop.is_set)
    assert seen == [1 / 3]


def test_a_huge_file_keeps_only_its_start_in_memory_but_counts_all_of_it(tmp_path, monkeypatch):
    monkeypatch.setattr(attachment_reader, "KEEP_CHARS", 1000)
    path = tmp_path / "huge.txt"
    path.write_text("word " * 10_000)
    read = read_file(path)
    assert len(read.text) == 1000 and read.chars == 50_000 and read.tokens == 12_500
    attachment = read.attachment()
    assert attachment.truncated and attachment.text == read.text


def test_the_part_that_fits_ends_at_a_line_break(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"line {i:04d} of the file\n" for i in range(1000)))
    read = read_file(path)
    part = read.attachment(max_tokens=100)
    assert part.truncated and part.text.endswith("\n") and len(part.text) <= 400
    assert part.text == read.text[:len(part.text)]
    assert not read.attachment(max_tokens=10**6).truncated


def test_bytes_are_kept_only_when_asked_and_not_past_the_limit(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    path.write_text("hello\n")
    assert read_file(path).data is None and read_file(path, keep_bytes=True).data == b"hello\n"
    monkeypatch.setattr(attachment_reader, "KEEP_BYTES_LIMIT", 3)
    assert read_file(path, keep_bytes=True).data is None
