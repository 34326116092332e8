"""`python -m app.devtools.bench_library [--mib 50] [--seconds 60] [--passages 50000]`: does indexing
a big folder freeze the window, does Cancel stop it, and what does a turn's search cost? Prints
figures, asserts nothing.

It writes a folder of `--mib` MiB of Markdown (Python's language reference, over and over, in
files of about 100 KB) and adds it to a conversation's library in the real window (offscreen, the
bundled embedding model), while a 10 ms timer runs on the GUI thread. After `--seconds` it presses
Cancel and waits for the indexing thread to stop. It prints the GUI thread's longest and median gap
between ticks (10 ms when nothing blocks it), how long Cancel took to stop, what was indexed (files,
passages, MiB) and the rate, and from it how long the whole folder would take here.

Then, for a turn's cost at that scale, it stores `--passages` passages (the same text, random unit
vectors: the search does the same work whatever the numbers) in one conversation's library and times
what `app.conversations.sources.search` does: reading the vectors from SQLite (once; then cached),
the FTS5 word ranking, embedding the question, and the whole search.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def write_folder(folder: Path, mib: int) -> int:
    """About `mib` MiB of Markdown in files of about 100 KB; returns the bytes written."""
    from pydoc_data.topics import topics

    text = "".join(f"# {name}\n\n{body}\n\n" for name, body in sorted(topics.items()))
    size, i = 0, 0
    while size < mib << 20:
        start = (i * 100_000) % max(1, len(text) - 100_000)
        piece = f"# Part {i}\n\n" + text[start:start + 100_000]
        path = folder / f"{i // 100:03d}" / f"part{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        size += path.write_bytes(piece.encode("utf-8"))
        i += 1
    return size


def index_bench(mib: int, seconds: float) -> dict:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.bridge import Bridge
    from app.devtools.self_test import wait_until
    from app.library.room import LibraryRoom
    from app.window.main_window import MainWindow

    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    home = Path(tempfile.mkdtemp(prefix="confab-bench-library-"))
    os.environ["CONFAB_HOME"] = str(home)
    written = write_folder(home / "docs", mib)
    bridge = Bridge()
    window = MainWindow(bridge)
    room = LibraryRoom(window, bridge)
    window.show()
    ids: list[int] = []
    bridge.run(lambda store: store.create_conversation("Bench").id).success(ids.append)
    wait_until(qapp, lambda: bool(ids), 60, "the conversation")
    window.refresh_conversations(select=ids[0])
    wait_until(qapp, lambda: window.chat.current_id == ids[0], 60, "the conversation shown")
    ticks: list[float] = []
    timer = QTimer(interval=10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    started = time.perf_counter()
    room.add_paths([home / "docs"])
    wait_until(qapp, lambda: not room.indexer.busy or time.perf_counter() - started > seconds, seconds + 60,
               "the time to pass")
    cancelled_at = time.perf_counter()
    room.line.cancel_button.click()
    wait_until(qapp, lambda: not room.indexer.busy, 600, "indexing to stop")
    stopped = time.perf_counter()
    timer.stop()
    done: list = []
    bridge.run(lambda store: store.library.documents(ids[0])).success(done.append)
    wait_until(qapp, lambda: bool(done), 60, "the documents")
    ready = [d for d in done[0] if d.status == "ready"]
    indexed = sum(d.size for d in ready)
    elapsed = cancelled_at - started
    gaps = [(b - a) * 1000 for a, b in zip(ticks, ticks[1:])]
    room.close()
    bridge.close()
    return {
        "folder_mib": round(written / 2**20, 1), "files": len(done[0]), "ran_s": round(elapsed, 1),
        "cancel_to_stopped_s": round(stopped - cancelled_at, 2), "files_indexed": len(ready),
        "passages": sum(d.chunks for d in ready), "mib_indexed": round(indexed / 2**20, 2),
        "mib_per_min": round(indexed / 2**20 / elapsed * 60, 3) if elapsed else None,
        "whole_folder_h": round(written / max(indexed, 1) * elapsed / 3600, 1) if indexed else None,
        "gui_gap_max_ms": round(max(gaps), 1) if gaps else None,
        "gui_gap_median_ms": round(statistics.median(gaps), 1) if gaps else None,
    }


def search_bench(passages: int) -> dict:
    import numpy as np
    from pydoc_data.topics import topics

    from app.conversations.sources import search
    from app.library.embedder import SharedEmbedder
    from app.store import ChunkRow, open_store

    home = Path(tempfile.mkdtemp(prefix="confab-bench-search-"))
    store = open_store(home).store
    embedder = SharedEmbedder().get()
    embedder.load()
    texts = [body[:1000] for _, body in sorted(topics.items())]
    c = store.create_conversation("Search")
    rng = np.random.default_rng(0)
    per_document = 5000
    for start in range(0, passages, per_document):
        n = min(per_document, passages - start)
        vectors = rng.standard_normal((n, embedder.dimensions)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        doc = store.library.add(c.id, f"/bench/{start}.md", f"{start}.md")
        store.library.fill(doc.id, [ChunkRow(texts[(start + i) % len(texts)]) for i in range(n)], vectors,
                           content_hash="", embedder=embedder.source, media_type="text/markdown", size=0, modified=0)
    question = "How does the with statement call __enter__ and __exit__?"
    t = time.perf_counter()
    store.library.matrix(c.id, embedder.source)
    first_matrix = time.perf_counter() - t
    t = time.perf_counter()
    store.library.word_ranking(c.id, question)
    words = time.perf_counter() - t
    t = time.perf_counter()
    embedder.embed([question])
    embed = time.perf_counter() - t
    t = time.perf_counter()
    search(store, embedder, c.id, question)
    whole = time.perf_counter() - t
    size = (home / "confab.db").stat().st_size
    store.close()
    embedder.close()
    return {"passages": passages, "database_mib": round(size / 2**20, 1), "vectors_from_sqlite_ms": round(first_matrix * 1000, 1),
            "fts5_words_ms": round(words * 1000, 1), "embed_question_ms": round(embed * 1000, 1),
            "search_cached_ms": round(whole * 1000, 1)}


def main(argv: list[str]) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    parser = argparse.ArgumentParser(prog="python -m app.devtools.bench_library")
    parser.add_argument("--mib", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--passages", type=int, default=50_000)
    args = parser.parse_args(argv)
    if args.mib:
        print("indexing:", index_bench(args.mib, args.seconds), flush=True)
    if args.passages:
        print("search:", search_bench(args.passages), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
