"""Which files a library takes, and their text: the attachment reader's (text in its encoding, PDFs
through PDFium page by page), all of it rather than the first part, with a content hash so that an
unchanged file is not embedded again. No widgets; runs on the indexing thread.

    files, skipped = folder_files(Path("~/manuals").expanduser())   # what a folder adds
    digest = content_hash(path)                                      # unchanged since it was indexed?
    text = read_document(path, cancelled=event.is_set)               # DocumentText, or a reason in words
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from app.chat.attachment_reader import BLOCK, ReadCancelled, UnreadableFileError, read_file

__all__ = ["DocumentText", "LIBRARY_KINDS", "MAX_CHARS", "MAX_FOLDER_FILES", "ReadCancelled", "SUFFIXES",
           "UnreadableFileError", "content_hash", "folder_files", "read_document"]

SUFFIXES = frozenset(
    ".txt .text .md .markdown .rst .adoc .tex .log .csv .tsv .json .jsonl .yaml .yml .toml .ini .cfg .xml "
    ".html .htm .css .py .js .ts .c .h .cpp .hpp .rs .go .java .kt .rb .php .sh .sql .pdf".split())
"""Files a folder adds (by their extension); a file picked by name is read whatever its name."""
LIBRARY_KINDS = "text, code, Markdown, CSV, JSON and PDF files"
MAX_FOLDER_FILES = 5000
"""Files one folder may add: more is nearly always a folder picked by mistake (a home folder, a
drive), and would mean hours of indexing on a CPU."""
MAX_CHARS = 64 << 20
"""Characters of one file's text kept (a 64 MB log): far past what a person asks a library about."""
_SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "venv", ".venv"})


@dataclass(frozen=True)
class DocumentText:
    """A file's text as a library reads it."""

    name: str
    media_type: str
    size: int
    modified: float
    text: str
    pages: tuple[str, ...] = ()
    """A PDF's pages (its passages then say "p. 12"); () for other files."""


def folder_files(folder: Path) -> tuple[list[Path], int]:
    """The files under `folder` a library takes, sorted, and how many others were passed over
    (hidden files and folders, and kinds it does not read). UnreadableFileError, in words, for a
    folder with none, or with more than MAX_FOLDER_FILES."""
    if not folder.is_dir():
        raise UnreadableFileError(f"{folder.name} is not a folder (it may have been moved or deleted).")
    found: list[Path] = []
    skipped = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
        for name in files:
            if not name.startswith(".") and Path(name).suffix.lower() in SUFFIXES:
                found.append(Path(root) / name)
            else:
                skipped += 1
        if len(found) > MAX_FOLDER_FILES:
            raise UnreadableFileError(
                f"{folder.name} holds more than {MAX_FOLDER_FILES:,} files a library reads; add the folders "
                "in it you need one at a time.")
    if not found:
        raise UnreadableFileError(f"{folder.name} holds no files a library reads ({LIBRARY_KINDS}).")
    return sorted(found), skipped


def content_hash(path: Path, cancelled: Callable[[], bool] = lambda: False) -> str:
    """SHA-256 of the file's bytes, read in blocks (a cancel is seen between them): read before
    the text, so an unchanged file costs one pass over its bytes and no embedding."""
    digest = hashlib.sha256()
    try:
        f = path.open("rb")
    except FileNotFoundError:
        raise UnreadableFileError(f"{path.name} was not found (it may have been moved or deleted).") from None
    except OSError as e:
        raise UnreadableFileError(f"{path.name} could not be read ({e.strerror or e}).") from None
    with f:
        while block := f.read(BLOCK):
            digest.update(block)
            if cancelled():
                raise ReadCancelled()
    return digest.hexdigest()


def read_document(path: Path, *, cancelled: Callable[[], bool] = lambda: False,
                  progress: Callable[[float], None] = lambda _f: None) -> DocumentText:
    """All of `path`'s text. UnreadableFileError says why it cannot be read (missing, empty,
    binary, a PDF with no text layer, ...); ReadCancelled when `cancelled()` turned true."""
    try:
        stat = path.stat()
    except OSError:
        raise UnreadableFileError(f"{path.name} was not found (it may have been moved or deleted).") from None
    if path.is_file() and stat.st_size == 0:
        raise UnreadableFileError(f"{path.name} is empty: there is no text to index.")
    try:
        read = read_file(path, progress=progress, cancelled=cancelled, keep_chars=MAX_CHARS)
    except UnreadableFileError as e:
        if "not a text file" in str(e):
            raise UnreadableFileError(f"{path.name} is not a text file (it holds binary data); a library reads "
                                      f"{LIBRARY_KINDS}.") from None
        raise UnreadableFileError(str(e).replace("no text to attach", "no text to index")) from None
    except OSError as e:
        raise UnreadableFileError(f"{path.name} could not be read ({e.strerror or e}).") from None
    return DocumentText(read.name, read.media_type, stat.st_size, stat.st_mtime, read.text, read.pages)
