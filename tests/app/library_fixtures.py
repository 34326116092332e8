"""Fixtures for the library tests, imported explicitly (not a conftest, so other tests never load
the embedding model):

    from tests.app.library_fixtures import embedder, manual_pdf  # noqa: F401 (fixtures)
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest

ANSWER = ("Calibration. To recalibrate the flow sensor, hold the service button for ten seconds until the "
          "amber light blinks twice, then pour exactly one litre of water through the inlet.")
QUESTION = "How do I reset the water sensor's measurement so it reads correctly again?"


@pytest.fixture(scope="session")
def embedder():
    """The bundled all-MiniLM-L6-v2, loaded once for every library test."""
    from app.library.embedder import SharedEmbedder

    shared = SharedEmbedder()
    shared.get().load()
    yield shared
    shared.close()


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A real PDF with a text layer, one string a page, written by Qt (no extra dependency)."""
    from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument

    def page(n: int, text: str) -> str:
        paragraphs = [p for p in text.split("\n\n") if p.strip()]
        return "".join(f"<p style='{'page-break-before: always' if n and not i else ''}'>{html.escape(p)}</p>"
                       for i, p in enumerate(paragraphs))

    doc = QTextDocument()
    doc.setDefaultStyleSheet("p { font-size: 9pt }")  # every page's text on its own page
    doc.setHtml("".join(page(n, text) for n, text in enumerate(pages)))
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    doc.print_(writer)
    return path


@pytest.fixture(scope="session")
def manual_pdf(qapp, tmp_path_factory) -> Path:
    """A 60-page PDF of prose nobody here wrote (Python's language reference, a topic's opening a
    page) with the answer to QUESTION on page 40, in other words than the question's."""
    from pydoc_data.topics import topics

    names = sorted(topics)
    pages = [topics[names[i % len(names)]][:1500] for i in range(60)]
    pages[39] = pages[39][:600] + "\n\n" + ANSWER + "\n\n" + pages[39][600:]
    return write_pdf(tmp_path_factory.mktemp("pdf") / "manual.pdf", pages)
