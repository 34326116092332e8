"""`python -m app.devtools.screenshots_library [OUT]`: pictures of a conversation's library.

Run under a virtual display like `app.devtools.screenshots`. It writes library-reply.png (a reply with
its sources), library-source.png (one of them opened) and library-dialog.png (Conversation ▸
Library…) into OUT (default `docs/`).
The document is a 60-page PDF made here from Python's language reference, with a paragraph about a
pump's flow sensor on page 40; the model is the bundled one, the embedding model too.
"""

from __future__ import annotations

import html
import sys
import tempfile
from pathlib import Path

from engine import SamplingParams

ANSWER = ("Calibration. To recalibrate the flow sensor, hold the service button for ten seconds until the "
          "amber light blinks twice, then pour exactly one litre of water through the inlet.")
QUESTION = "How do I recalibrate the flow sensor?"


def write_manual(path: Path) -> Path:
    """60 pages of prose nobody here wrote, the answer on page 40 (Qt writes the PDF)."""
    from pydoc_data.topics import topics
    from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument

    names = sorted(topics)
    pages = [topics[names[i % len(names)]][:1500] for i in range(60)]
    pages[39] = pages[39][:600] + "\n\n" + ANSWER + "\n\n" + pages[39][600:]
    body = "".join(f"<p style='{'page-break-before: always' if n and not i else ''}'>{html.escape(p)}</p>"
                   for n, text in enumerate(pages) for i, p in enumerate(t for t in text.split("\n\n") if t.strip()))
    doc = QTextDocument()
    doc.setDefaultStyleSheet("p { font-size: 9pt }")
    doc.setHtml(body)
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    doc.print_(writer)
    return path


def main(argv: list[str]) -> int:
    from app.devtools.screenshots import save_picture, settle, start_window
    from app.devtools.screenshots_mcp import save_screen
    from app.devtools.self_test import wait_until

    out = Path(argv[0] if argv else "docs")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-library-"))
    qapp, confab = start_window(home)
    window, library = confab.window, confab.library
    confab.bridge.params = SamplingParams(temperature=0, max_tokens=80)
    manual = write_manual(home / "pump-manual.pdf")
    ids: list[int] = []
    confab.bridge.run(lambda store: store.create_conversation("Pump manual").id).success(ids.append)
    wait_until(qapp, lambda: bool(ids), 60, "the conversation")
    window.refresh_conversations(select=ids[0])
    wait_until(qapp, lambda: window.chat.current_id == ids[0], 60, "the conversation shown")
    library.add_paths([manual])
    wait_until(qapp, lambda: library.line.isVisible(), 60, "indexing to start")
    wait_until(qapp, lambda: not library.indexer.busy, 900, "the manual indexed")
    window.composer.setPlainText(QUESTION)
    window.composer.submit()
    wait_until(qapp, lambda: not confab.bridge.replying() and window.chat_view.message_views()
               and window.chat_view.message_views()[-1].sources.links, 900, "the reply and its sources")
    settle(qapp, 1.0)
    save_picture(window, out / "library-reply.png")
    sources = window.chat_view.message_views()[-1].sources
    page_40 = next((s for s in sources.sources if "40" in s.location), sources.sources[0])
    sources.open(page_40).move(window.geometry().center() - sources.viewer.rect().center())
    settle(qapp, 0.8)
    save_screen(qapp, out / "library-source.png")
    sources.viewer.close()
    dialog = library.open_dialog()
    wait_until(qapp, lambda: dialog.list.topLevelItemCount() == 1, 60, "the library dialog")
    settle(qapp, 0.8)
    save_picture(dialog, out / "library-dialog.png")
    dialog.close()
    window.close()
    confab.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
