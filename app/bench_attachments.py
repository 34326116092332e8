"""`python -m app.bench_attachments [--mib 200] [--pdf-pages 0]`: does attaching a big file freeze the
window? Prints figures, asserts nothing.

It writes a text file of `--mib` MiB (and, with `--pdf-pages`, a PDF of about that many pages,
written by Qt) into a temporary folder, attaches it through the composer's `AttachmentTray` (read on
its own thread) while a 10 ms timer runs on the GUI thread, and prints how long the read took, how
many progress updates the chip got, and the GUI thread's longest and median gap between timer ticks
(10 ms when nothing blocks it). For scale it also prints the plain library's time for the same
text: `Path.read_bytes().decode()` on one thread, with nothing else to do.
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


def measure(qapp, path: Path) -> dict[str, float]:
    from PySide6.QtCore import QTimer

    from app.attachment_tray import AttachmentTray

    tray = AttachmentTray()
    tray.room = lambda: 128_000
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
    timer.stop()
    return {"read_s": took, "updates": len(updates), "longest_gap_ms": max(gaps, default=0) * 1000,
            "median_gap_ms": statistics.median(gaps) * 1000 if gaps else 0.0, "state": tray.drafts[0].chip.state}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200, help="size of the text file (MiB)")
    parser.add_argument("--pdf-pages", type=int, default=0, help="also a PDF of about this many pages")
    args = parser.parse_args(argv)
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
            r = measure(qapp, path)
            print(f"{path.name}: {path.stat().st_size / (1 << 20):.1f} MiB read in {r['read_s']:.2f} s "
                  f"({r['state']}), {r['updates']} progress updates; GUI thread: longest gap "
                  f"{r['longest_gap_ms']:.0f} ms, median {r['median_gap_ms']:.1f} ms (10 ms = never blocked)")
        print(f"plain read_bytes().decode() of the text file: {plain:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
