"""`python -m app.devtools.screenshots_attachments [OUT]`: a picture of attached files.

Run under a virtual display like `app.devtools.screenshots` (docs/screenshots.sh runs it). A conversation
holds a question sent with a PDF and a CSV (read by the app's own reader; the sent message shows
them as chips) and a reply written by hand, as in `app.devtools.screenshots` (the bundled demo model is too
small to summarize them). Then, in the window with the bundled model loaded, a Markdown file and a
log too big for the model's context are attached to the next message (the composer shows a ready
chip, and one offering to attach the part that fits), and attachments.png is written into OUT
(default `docs/`). The files are written into a temporary folder.
"""

from __future__ import annotations

import dataclasses

import sys
import tempfile
from pathlib import Path


MINUTES = [
    "<h2>River council — minutes, 12 March</h2><p>Present: the mayor, four councillors, the river warden.</p>"
    "<p>The warden reported that the river rose 1.8 m above its usual level in February and flooded the "
    "lower meadows for nine days. The sports ground was closed for three weeks.</p>",
    "<h3>Options discussed</h3><ol><li>Raise the levee along the lower meadows (cost about 400,000).</li>"
    "<li>Dig a bypass channel below the old mill (about 1.1 million).</li>"
    "<li>Move the sports ground uphill (about 250,000).</li></ol><p>No decision was taken.</p>",
]
LEVELS = "month,level_m\nOctober,0.4\nNovember,0.7\nDecember,1.1\nJanuary,1.5\nFebruary,1.8\nMarch,1.2\n"
REPLY = ("- **What happened:** the river rose 1.8 m in February and flooded the lower meadows for nine "
         "days; the sports ground was closed for three weeks.\n"
         "- **Options:** raise the levee (about 400,000), dig a bypass channel (about 1.1 million), or "
         "move the sports ground uphill (about 250,000).\n"
         "- **Levels:** highest in February (1.8 m), already falling in March (1.2 m). No decision yet.")
NOTES = "# My notes\n\n- Ask about insurance for the sports ground\n- Who pays for the levee?\n"


def write_files(folder: Path) -> dict[str, Path]:
    """The sample files: minutes.pdf (a real PDF with a text layer), levels.csv, notes.md, and a
    log far bigger than the bundled model's context."""
    from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument

    pdf = folder / "council-minutes.pdf"
    doc = QTextDocument()
    doc.setHtml("".join(f"<div style='page-break-after: always'>{page}</div>" for page in MINUTES))
    writer = QPdfWriter(str(pdf))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A5))
    doc.print_(writer)
    files = {"pdf": pdf, "csv": folder / "levels.csv", "notes": folder / "notes.md",
             "log": folder / "river-gauge.log"}
    files["csv"].write_text(LEVELS)
    files["notes"].write_text(NOTES)
    files["log"].write_text("".join(f"2026-03-{1 + i % 28:02d} 06:{i % 60:02d} gauge 3 level {1.2 + (i % 7) / 10:.2f} m\n"
                                    for i in range(6000)))
    return files


def main(argv: list[str]) -> int:
    from PySide6.QtWidgets import QApplication

    from app.chat.attachment_reader import read_file
    from app.devtools.screenshots import make_sample_folder, save_picture, settle, start_window
    from app.devtools.self_test import wait_until

    out = Path(argv[0] if argv else "docs")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-"))
    make_sample_folder(home)
    qapp = QApplication(sys.argv[:1])  # before the files: the PDF is written with Qt's QPdfWriter
    files = write_files(Path(tempfile.mkdtemp(prefix="confab-files-")))
    qapp, confab = start_window(home)
    window = confab.window
    chat, tray = window.chat, window.chat.files.tray

    def chips_settled(count: int) -> bool:
        return len(tray.drafts) == count and not tray.reading()

    window.show_conversation(None)
    settle(qapp, 0.5)
    # with the model's exact counts, stored as the composer stores them when a message is sent
    sent = tuple(dataclasses.replace(a, tokens=confab.engine.count_tokens(a.text), tokens_exact=True)
                 for a in (read_file(files[k]).attachment() for k in ("pdf", "csv")))
    question = "Summarize the minutes and the river levels in three bullet points."

    def write(store) -> int:
        c = store.create_conversation("River council minutes")
        store.append_message(c.id, "user", question, attachments=sent)
        store.append_message(c.id, "assistant", REPLY, model=confab.engine.model.name)
        return c.id

    made = []
    confab.bridge.run(write).success(made.append)
    wait_until(qapp, lambda: bool(made), 30, "the sample conversation")
    window.refresh_conversations(select=made[0])
    wait_until(qapp, lambda: len(chat.chat_view.message_views()) == 2, 30, "its messages")
    tray.add_paths([files["notes"], files["log"]])
    wait_until(qapp, lambda: chips_settled(2), 60, "the next files")
    window.composer.setPlainText("And what should the council decide?")
    settle(qapp, 1.0)
    path = out / "attachments.png"
    save_picture(window, path)
    window.close()
    confab.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
