"""Which drops and pastes are files to attach: local file URLs (a file manager's copy or drag, or
their text form), never web links or plain text, which still paste as text."""

from __future__ import annotations


from PySide6.QtCore import QMimeData, QUrl

from app.chat.file_drop import local_files


def _urls(*urls: str) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl(u) for u in urls])
    return mime


def _text(text: str) -> QMimeData:
    mime = QMimeData()
    mime.setText(text)
    return mime


def test_local_file_urls_are_files(tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b b.pdf"
    mime = _urls(QUrl.fromLocalFile(str(a)).toString(), QUrl.fromLocalFile(str(b)).toString())
    assert local_files(mime) == [a, b]  # pathlib.Path objects


def test_copied_file_urls_as_text_are_files(tmp_path):
    a = tmp_path / "a.md"
    assert local_files(_text(QUrl.fromLocalFile(str(a)).toString() + "\n")) == [a]


def test_web_links_plain_text_and_nothing_are_not_files():
    assert local_files(_urls("https://example.org/a.pdf")) == []
    assert local_files(_urls("file:///tmp/a.md", "https://example.org/b.md")) == []  # not all local
    assert local_files(_text("notes about file://things")) == []
    assert local_files(_text("")) == []
    assert local_files(QMimeData()) == [] and local_files(None) == []
