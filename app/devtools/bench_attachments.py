"""`python -m app.devtools.bench_attachments [--mib 200] [--pdf-pages 0] [--count]`: does attaching a big file
freeze the window? Prints figures, asserts nothing.

It writes a text file of `--mib` MiB (and, with `--pdf-pages`, a PDF of about that many pages,
written by Qt) into a temporary folder, attaches it through the composer's `AttachmentTray` (read on
its own thread) while a 10 ms timer runs on the GUI thread, and prints how long the read took, how
many progress updates the chip got, and the GUI thread's longest and median gap between timer ticks
(10 ms when nothing blocks it). For scale it also prints the plain library's time for the same
text: `Path.read_bytes().decode()` on one thread, with nothing else to do.

With `--count` the bundled model's engine counts the tokens (as for a local model, in a 128k-token
context), and the bench also clicks "Attach the first part" and times the search for the cut with
exact counts; for scale, one plain tokenizer call on the text that part holds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

LINE = b"2026-11-24 12:00:00 INFO gauge 3 level 1.42 m, the river rises in the eastern hills\n"


def write_pdf(path: Path, pages: int) -> Path:
    """A text PDF of about `pages` A4 pages, written by Qt."""
    from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument

    doc = QTextDocument()
    doc.setPlainText("\n\n".join(f"Section {i}. " + LINE.decode() * 6 for i in range(pages * 4)))
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    doc.print_(writer)
    return path


CONTEXT = 128_000
"""The context the bench pretends the model has (a common one today)."""


def measure(qapp, path: Path, count=None) -> dict[str, float]:
    from PySide6.QtCore import QTimer

    from app.chat.attachment_tray import AttachmentTray

    tray = AttachmentTray()
    tray.room = lambda: CONTEXT
    tray.context = lambda: CONTEXT
    tray.count_tokens = count
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(10)
    updates: list[int] = []
    started = time.perf_counter()
    tray.add_paths([path])
    tray.drafts[0].chip.bar.valueChanged.connect(updates.append)
    while tray.reading():
        qapp.processEvents()
        time.sleep(0.001)
    took = time.perf_counter() - started
    draft = tray.drafts[0]
    result = {"read_s": took, "updates": len(updates), "state": draft.chip.state, "tokens": draft.chip.label.text()}
    if draft.chip.state == "too_big":
        started = time.perf_counter()
        draft.chip.fit_button.click()
        while draft.chip.state != "ready":
            qapp.processEvents()
            time.sleep(0.001)
        result.update(fit_s=time.perf_counter() - started, part_chars=len(draft.attachment.text),
                      part_tokens=draft.counted.tokens)
    timer.stop()
    result.update(longest_gap_ms=max(gaps, default=0) * 1000,
                  median_gap_ms=statistics.median(gaps) * 1000 if gaps else 0.0)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200, help="size of the text file (MiB)")
    parser.add_argument("--pdf-pages", type=int, default=0, help="also a PDF of about this many pages")
    parser.add_argument("--count", action="store_true", help="count tokens with the bundled model's engine")
    args = parser.parse_args(argv)
    engine = None
    if args.count:
        from engine import DEFAULT_MODEL, Engine

        engine = Engine.load(DEFAULT_MODEL)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    qapp = QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="confab-bench-") as folder:
        text = Path(folder) / "big.log"
        text.write_bytes(LINE * (args.mib * (1 << 20) // len(LINE)))
        started = time.perf_counter()
        text.read_bytes().decode("utf-8")
        plain = time.perf_counter() - started
        paths = [text]
        if args.pdf_pages:
            paths.append(write_pdf(Path(folder) / "big.pdf", args.pdf_pages))
        for path in paths:
            r = measure(qapp, path, engine.count_tokens if engine is not None else None)
            print(f"{path.name}: {path.stat().st_size / (1 << 20):.1f} MiB read and counted in {r['read_s']:.2f} s "
                  f"({r['state']}: {r['tokens']}), {r['updates']} progress updates; GUI thread: longest gap "
                  f"{r['longest_gap_ms']:.0f} ms, median {r['median_gap_ms']:.1f} ms (10 ms = never blocked)")
            if "fit_s" in r:
                print(f"  the first part that fits {CONTEXT:,} tokens: {r['part_tokens']:,} tokens "
                      f"({r['part_chars']:,} characters) found in {r['fit_s']:.2f} s")
                if engine is not None:
                    head = path.read_bytes()[:r["part_chars"] * 2].decode("utf-8", "ignore")[:r["part_chars"]]
                    started = time.perf_counter()
                    engine.tokenizer(head, add_special_tokens=False)
                    once = time.perf_counter() - started
                    print(f"  plain tokenizer, once over that part: {once:.2f} s "
                          f"(the search took {r['fit_s'] / once:.1f}× that)")
        print(f"plain read_bytes().decode() of the text file: {plain:.2f} s")
    if engine is not None:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
