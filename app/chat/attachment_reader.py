"""Reading a file to attach: its text, or why it cannot be attached. No Qt; runs off the GUI thread.

    read = read_file(path, progress=lambda f: ..., cancelled=event.is_set, keep_bytes=False)
    attachment = read.attachment()                      # all of it
    attachment = read.attachment(max_tokens=3000)       # only the part that fits

Text, code, Markdown, CSV and JSON files are read as UTF-8 (a byte-order mark picks UTF-8 or
UTF-16; other 8-bit text is read as Windows-1252, which accepts every byte). PDFs are read with
pypdfium2 (PDFium's text extraction): binary wheels for Linux, Windows and macOS (x86-64 and
arm64). Against pure-Python pypdf (wheels everywhere too) on a 54-page text PDF, on a busy 2-core
machine, three runs: pypdfium2 0.33–0.76 s, pypdf 10–17 s (22–31× slower), and pypdf's text had
tabs between words and ligature characters ("ﬂoods"). PDFium is not thread-safe, so one document
is read at a time (`_PDF_LOCK`). Images are read apart (`image_reader`); anything else —
archives, office files, executables — is refused with the reason.

A large file is read in 1 MiB blocks with progress and can be cancelled between blocks. Only the
first `KEEP_CHARS` characters are kept: far more than any model's context, so a 200 MB log costs
that much memory at most, while its size and token count still cover the whole file.
"""

from __future__ import annotations

import codecs
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from app.chat.context_meter import CHARS_PER_TOKEN, estimate_tokens
from app.store import Attachment

BLOCK = 1 << 20
"""Bytes read between progress reports and cancellation checks."""
KEEP_CHARS = 16 << 20
"""Characters of a file's text kept in memory (about 4M tokens: more than any context holds)."""
KEEP_BYTES_LIMIT = 64 << 20
"""Files up to this size keep a copy of their bytes when the user asked for copies; bigger ones
keep their text only (a database is a poor home for hundreds of megabytes)."""
SUPPORTED = "text, code, Markdown, CSV, JSON and PDF files, and images"
_MEDIA_TYPES = {
    ".md": "text/markdown", ".markdown": "text/markdown", ".csv": "text/csv",
    ".tsv": "text/tab-separated-values", ".json": "application/json", ".jsonl": "application/jsonl",
    ".py": "text/x-python", ".js": "text/javascript", ".ts": "text/x-typescript", ".html": "text/html",
    ".css": "text/css", ".c": "text/x-c", ".h": "text/x-c", ".cpp": "text/x-c++", ".rs": "text/x-rust",
    ".go": "text/x-go", ".java": "text/x-java", ".sh": "text/x-shellscript", ".yaml": "application/yaml",
    ".yml": "application/yaml", ".toml": "application/toml", ".xml": "application/xml",
    ".sql": "application/sql",
}
"""Media types by extension; any other file that reads as text is "text/plain". A table of our own,
not `mimetypes`, which reads the system's own list and so differs by machine (".ts" is a Qt
translation file on one, an MPEG stream on another)."""
_PDF_LOCK = threading.Lock()  # PDFium is not thread-safe: one document at a time in this process


class UnreadableFileError(Exception):
    """The file cannot be attached; the message says why, in words for the user."""


class ReadCancelled(Exception):
    """The user cancelled the read."""


@dataclass(frozen=True)
class FileRead:
    """A file read for attaching (the whole of it, up to `KEEP_CHARS` characters of text)."""

    name: str
    media_type: str
    size: int
    """Bytes of the file."""
    text: str
    """Its text, or the first `KEEP_CHARS` characters of it."""
    chars: int
    """Characters in the whole file's text (more than len(text) when it was longer than kept)."""
    data: Optional[bytes] = None
    """A copy of its bytes (only when asked for, and the file is at most KEEP_BYTES_LIMIT)."""
    pages: tuple[str, ...] = ()
    """A PDF's text page by page (a library cites pages); () for other files."""

    @property
    def tokens(self) -> int:
        """Estimated tokens of the whole text, as the context meter counts."""
        return int(self.chars / CHARS_PER_TOKEN + 0.999) if self.chars else 0

    def attachment(self, max_tokens: Optional[int] = None) -> Attachment:
        """The attachment to send: all of the text, or (with `max_tokens`) only its first part,
        cut at a line break when one is near, and marked `truncated`."""
        text = self.text
        truncated = len(text) < self.chars
        if max_tokens is not None and estimate_tokens(text) > max_tokens:
            limit = max(0, int(max_tokens * CHARS_PER_TOKEN))
            cut = text.rfind("\n", 0, limit)
            text = text[:cut + 1] if cut > limit * 0.8 else text[:limit]
            truncated = True
        return Attachment(self.name, self.media_type, self.size, text, truncated=truncated, data=self.data)


def read_file(path: Path | str, *, progress: Callable[[float], None] = lambda _f: None,
              cancelled: Callable[[], bool] = lambda: False, keep_bytes: bool = False,
              keep_chars: Optional[int] = None) -> FileRead:
    """Read `path` for attaching, keeping `KEEP_CHARS` characters of its text (a library asks for
    more: it keeps all of a file). Raises UnreadableFileError (with the reason) or ReadCancelled."""
    path = Path(path)
    name = path.name
    if not path.exists():
        raise UnreadableFileError(f"{name} was not found (it may have been moved or deleted).")
    if path.is_dir():
        raise UnreadableFileError(f"{name} is a folder; attach the files in it instead.")
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if head.startswith(b"%PDF-"):
                return _read_pdf(name, path, f, progress, cancelled, keep_bytes)
            return _read_text(name, path, f, progress, cancelled, keep_bytes,
                              KEEP_CHARS if keep_chars is None else keep_chars)
    except OSError as e:
        raise UnreadableFileError(f"{name} could not be read ({e.strerror or e}).") from None


def _read_text(name: str, path: Path, f, progress, cancelled, keep_bytes: bool, keep_chars: int) -> FileRead:
    size = path.stat().st_size
    f.seek(0)
    first = f.read(BLOCK)
    decoder, skip = _decoder_for(name, first)
    kept: list[str] = []
    kept_chars = chars = 0
    raw: list[bytes] = [] if keep_bytes and size <= KEEP_BYTES_LIMIT else None  # type: ignore[assignment]
    block, done = first[skip:], len(first)
    while True:
        if raw is not None:
            raw.append(block)
        try:
            piece = decoder.decode(block, final=not block)
        except UnicodeDecodeError:
            raise UnreadableFileError(_binary(name)) from None
        if "\x00" in piece:
            raise UnreadableFileError(_binary(name))
        chars += len(piece)
        if kept_chars < keep_chars:
            kept.append(piece[:keep_chars - kept_chars])
            kept_chars += len(kept[-1])
        if not block:
            break
        progress(min(done / size, 1.0) if size else 1.0)
        if cancelled():
            raise ReadCancelled()
        block = f.read(BLOCK)
        done += len(block)
    text = "".join(kept).replace("\r\n", "\n")
    if not text.strip():
        raise UnreadableFileError(f"{name} is empty: there is no text to attach.")
    media_type = _MEDIA_TYPES.get(path.suffix.lower(), "text/plain")
    return FileRead(name, media_type, size, text, chars - (len("".join(kept)) - len(text)),
                    b"".join(raw) if raw is not None else None)


def _decoder_for(name: str, first: bytes) -> tuple[codecs.IncrementalDecoder, int]:
    """The decoder for a file starting with `first`, and how many bytes of byte-order mark to skip."""
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                          (codecs.BOM_UTF16_BE, "utf-16-be")):
        if first.startswith(bom):
            return codecs.getincrementaldecoder(encoding)(), len(bom)
    if b"\x00" in first or _mostly_control(first):
        raise UnreadableFileError(_binary(name))
    try:
        first.decode("utf-8")
        return codecs.getincrementaldecoder("utf-8")(), 0
    except UnicodeDecodeError as e:
        if len(first) == BLOCK and e.start >= len(first) - 3:  # a character cut by the block end: UTF-8
            return codecs.getincrementaldecoder("utf-8")(), 0
    return codecs.getincrementaldecoder("cp1252")(errors="replace"), 0


def _mostly_control(data: bytes) -> bool:
    """More than 1 in 100 bytes are control characters other than tab, newlines and form feed."""
    controls = sum(1 for b in data[:65536] if b < 32 and b not in (9, 10, 12, 13))
    return controls * 100 > min(len(data), 65536)


def _binary(name: str) -> str:
    return f"{name} is not a text file (it holds binary data); Confab can attach {SUPPORTED}."


def _read_pdf(name: str, path: Path, f, progress, cancelled, keep_bytes: bool) -> FileRead:
    import pypdfium2 as pdfium

    size = path.stat().st_size
    f.seek(0)
    blocks, done = [], 0
    while block := f.read(BLOCK):  # the bytes first (30% of the bar), so a cancel is quick there too
        blocks.append(block)
        done += len(block)
        progress(0.3 * done / size)
        if cancelled():
            raise ReadCancelled()
    data = b"".join(blocks)
    pages: list[str] = []
    with _PDF_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as e:
            reason = "it is password-protected" if "password" in str(e).lower() else f"it is damaged ({e})"
            raise UnreadableFileError(f"{name} could not be read as a PDF: {reason}.") from None
        try:
            count = len(pdf)
            for i in range(count):
                page = pdf[i]
                textpage = page.get_textpage()
                pages.append(textpage.get_text_range().replace("\r\n", "\n").replace("\r", "\n"))
                textpage.close()
                page.close()
                progress(0.3 + 0.7 * (i + 1) / count)
                if cancelled():
                    raise ReadCancelled()
        finally:
            pdf.close()
    text = "\n\n".join(p.strip("\n") for p in pages).strip()
    if not text:
        raise UnreadableFileError(f"{name} has no text to read (its pages may be scanned images).")
    kept = text[:KEEP_CHARS]
    return FileRead(name, "application/pdf", size, kept, len(text),
                    data if keep_bytes and size <= KEEP_BYTES_LIMIT else None, tuple(p.strip("\n") for p in pages))
