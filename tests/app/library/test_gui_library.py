"""The library in the window: a folder indexed off the GUI thread while the window keeps answering,
Cancel stops it with what was indexed kept, a reply shows its sources (each opens the passage it
read, More passages reads more), Remove drops a document's passages, the library is there after a
restart, a file too big for the context goes to the library, and bad files say why."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import Qt, QTimer

from app.bridge import Bridge
from app.conversations.sources import MORE, TOP
from app.library import indexer as indexer_module
from app.library.indexing import EMBED_BATCH
from app.library.room import LibraryRoom
from tests.app.gui_fixtures import GREEDY, bridge, gui_engine, window  # noqa: F401 (fixtures)
from tests.app.library_fixtures import embedder  # noqa: F401 (fixture)

INDEX_TIMEOUT = 120_000
REPLY_TIMEOUT = 60_000


@pytest.fixture
def room(window, bridge, embedder):  # noqa: F811
    r = LibraryRoom(window, bridge, embedder)
    yield r
    r.close()


def ask(qtbot, bridge, fn):  # noqa: F811
    """`fn(store)` on the store's thread, waited for."""
    out = []
    bridge.run(fn).success(out.append)
    qtbot.waitUntil(lambda: bool(out), timeout=10_000)
    return out[0]


def new_conversation(qtbot, window, bridge, title="Pumps"):  # noqa: F811
    cid = ask(qtbot, bridge, lambda store: store.create_conversation(title).id)
    window.refresh_conversations(select=cid)
    qtbot.waitUntil(lambda: window.chat.current_id == cid, timeout=10_000)
    return cid


def wait_idle(qtbot, room):
    qtbot.waitUntil(lambda: not room.indexer.busy, timeout=INDEX_TIMEOUT)


def manual(i: int, sections: int = 4) -> str:
    return f"# Pump {i}\n\n" + "\n\n".join(f"## Part {i}.{j}\n\nPump {i} part {j} hums when valve {j} opens."
                                           for j in range(sections))


def test_a_folder_is_indexed_off_the_gui_thread_while_the_window_answers(qtbot, window, bridge, room, tmp_path,
                                                                          monkeypatch):  # noqa: F811
    folder = tmp_path / "manuals"
    (folder / "more").mkdir(parents=True)
    for i in range(6):
        (folder / ("more" if i % 2 else "") / f"pump{i}.md").write_text(manual(i, 12))
    threads, ticks = set(), []
    real = indexer_module.index_document
    monkeypatch.setattr(indexer_module, "index_document",
                        lambda *a, **k: (threads.add(threading.current_thread().name), real(*a, **k))[1])
    timer = QTimer(interval=20)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    cid = new_conversation(qtbot, window, bridge)
    timer.start()
    room.add_paths([folder])
    qtbot.waitUntil(lambda: room.line.isVisible(), timeout=10_000)
    wait_idle(qtbot, room)
    timer.stop()
    documents = ask(qtbot, bridge, lambda store: store.library.documents(cid))
    assert sorted(d.name for d in documents) == sorted(
        ["manuals/pump0.md", "manuals/pump2.md", "manuals/pump4.md", "manuals/more/pump1.md",
         "manuals/more/pump3.md", "manuals/more/pump5.md"])
    assert all(d.status == "ready" and d.chunks > 0 for d in documents)
    assert threads and threading.main_thread().name not in threads
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(ticks) > 10 and max(gaps) < 1.0, f"the window stalled {max(gaps):.2f} s"
    qtbot.waitUntil(lambda: room.badge.text() == "Library: 6 documents", timeout=10_000)
    assert room.button.text() == "Library · 6" and not room.line.isVisible()


def test_cancel_stops_indexing_and_keeps_what_was_indexed(qtbot, window, bridge, room, tmp_path):  # noqa: F811
    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(4):  # each file two or more embedding batches
        (folder / f"part{i}.md").write_text(manual(i, 2 * EMBED_BATCH + 4))
    cid = new_conversation(qtbot, window, bridge)
    room.add_paths([folder])
    qtbot.waitUntil(lambda: "(2 of 4): embedding" in room.line.label.text(), timeout=INDEX_TIMEOUT)
    qtbot.mouseClick(room.line.cancel_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, room)
    documents = {d.name: d for d in ask(qtbot, bridge, lambda store: store.library.documents(cid))}
    assert documents["big/part0.md"].status == "ready" and documents["big/part0.md"].chunks > 0
    assert [documents[f"big/part{i}.md"].status for i in (1, 2, 3)] == ["cancelled"] * 3
    assert all(documents[f"big/part{i}.md"].chunks == 0 for i in (1, 2, 3))
    assert not room.line.isVisible()
    dialog = room.open_dialog()
    qtbot.waitUntil(lambda: dialog.list.topLevelItemCount() == 4, timeout=10_000)
    assert [dialog.list.topLevelItem(i).text(1) for i in range(4)] == ["ready", "stopped", "stopped", "stopped"]


def test_a_reply_shows_its_sources_each_opens_its_passage_and_more_reads_more(qtbot, window, bridge, room,
                                                                             tmp_path):  # noqa: F811
    (tmp_path / "pumps.md").write_text(manual(7, 14))
    cid = new_conversation(qtbot, window, bridge)
    room.add_paths([tmp_path / "pumps.md"])
    wait_idle(qtbot, room)
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClicks(window.composer, "When does pump 7 hum?")
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.chat_view.message_views()[-1].sources.isVisible(), timeout=10_000)
    sources = window.chat_view.message_views()[-1].sources
    assert len(sources.links) == TOP and sources.links[0].text().startswith("[1] pumps.md §Part 7.")
    viewer = sources.open(sources.sources[0])
    assert "hums when valve" in viewer.text.toPlainText() and viewer.isVisible()
    viewer.close()
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.mouseClick(sources.more_button, Qt.MouseButton.LeftButton)
    messages = ask(qtbot, bridge, lambda store: store.messages(cid))
    assert messages[-1].version == 2 and TOP < len(messages[-1].sources) <= MORE
    qtbot.waitUntil(lambda: len(window.chat_view.message_views()[-1].sources.links) == len(messages[-1].sources),
                    timeout=10_000)


def test_remove_drops_a_document_and_its_passages(qtbot, window, bridge, room, tmp_path):  # noqa: F811
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(manual(1))
    cid = new_conversation(qtbot, window, bridge)
    room.add_paths([tmp_path / "a.md", tmp_path / "b.md"])
    wait_idle(qtbot, room)
    dialog = room.open_dialog()
    qtbot.waitUntil(lambda: dialog.list.topLevelItemCount() == 2, timeout=10_000)
    dialog.list.topLevelItem(0).setSelected(True)
    qtbot.mouseClick(dialog.remove_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.list.topLevelItemCount() == 1, timeout=10_000)
    assert dialog.list.topLevelItem(0).text(0) == "b.md" and room.badge.text() == "Library: 1 document"
    left = ask(qtbot, bridge, lambda store: [r[0] for r in store.db.execute(
        "select distinct d.name from library_chunks c join library_documents d on d.id = c.document_id")])
    assert left == ["b.md"]


def test_the_library_is_there_after_a_restart(qtbot, window, bridge, room, embedder, tmp_path):  # noqa: F811
    from app.window.main_window import MainWindow

    (tmp_path / "a.md").write_text(manual(2))
    cid = new_conversation(qtbot, window, bridge)
    room.add_paths([tmp_path / "a.md"])
    wait_idle(qtbot, room)
    room.close()
    bridge.close()
    again = Bridge(params=GREEDY)
    try:
        w = MainWindow(again)
        qtbot.addWidget(w)
        r = LibraryRoom(w, again, embedder)
        w.refresh_conversations(select=cid)
        qtbot.waitUntil(lambda: r.badge.text() == "Library: 1 document", timeout=10_000)
        [document] = ask(qtbot, again, lambda store: store.library.documents(cid))
        assert (document.status, document.chunks > 0) == ("ready", True)
        r.close()
    finally:
        again.close()


def test_a_file_too_big_for_the_context_can_go_to_the_library(qtbot, window, bridge, room, tmp_path):  # noqa: F811
    big = tmp_path / "handbook.md"
    big.write_text("\n\n".join(manual(i) for i in range(60)))  # far past the tiny model's 1,024 tokens
    window.chat.context_meter.set_limit(1024)
    window.chat.files.tray.add_paths([big])
    tray = window.chat.files.tray
    qtbot.waitUntil(lambda: tray.drafts and tray.drafts[0].chip.state == "too_big", timeout=10_000)
    chip = tray.drafts[0].chip
    assert chip.library_button.isVisibleTo(chip) and "Add to library" in tray.needs_word()
    qtbot.mouseClick(chip.library_button, Qt.MouseButton.LeftButton)
    assert not tray.drafts  # the chip went: the file is the library's now
    qtbot.waitUntil(lambda: window.chat.current_id is not None, timeout=10_000)  # a conversation for it
    cid = window.chat.current_id
    wait_idle(qtbot, room)
    [document] = ask(qtbot, bridge, lambda store: store.library.documents(cid))
    assert (document.name, document.status) == ("handbook.md", "ready")
    assert ask(qtbot, bridge, lambda store: store.get_conversation(cid).title) == "handbook.md"


def test_bad_files_say_why_in_the_dialog(qtbot, qapp, window, bridge, room, tmp_path):  # noqa: F811
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blob.md").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "photo.png").write_bytes(b"\x89PNG")
    new_conversation(qtbot, window, bridge)
    dialog = room.open_dialog()
    room.add_paths([tmp_path / "empty.txt", tmp_path / "blob.md", tmp_path / "nothing"])
    wait_idle(qtbot, room)
    qtbot.waitUntil(lambda: dialog.list.topLevelItemCount() == 2 and all(
        dialog.list.topLevelItem(i).text(1) == "failed" for i in range(2)), timeout=10_000)
    tips = [dialog.list.topLevelItem(i).toolTip(1) for i in range(2)]
    assert tips == ["empty.txt is empty: there is no text to index.",
                    "blob.md is not a text file (it holds binary data); a library reads text, code, Markdown, "
                    "CSV, JSON and PDF files."]
    assert window.notices.text == ("nothing holds no files a library reads (text, code, Markdown, CSV, JSON "
                                   "and PDF files).")


def test_a_changed_file_is_said_and_re_indexing_reads_it_again(qtbot, window, bridge, room, tmp_path):  # noqa: F811
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nThe pump is blue.\n")
    cid = new_conversation(qtbot, window, bridge)
    room.add_paths([path])
    wait_idle(qtbot, room)
    window.figures.refresh()  # the embedding model is loaded now: its memory is counted
    assert "Embedding model for libraries:" in window.figures.toolTip()
    path.write_text("# Notes\n\nThe pump is green and hums quietly.\n")
    dialog = room.open_dialog()
    qtbot.waitUntil(lambda: dialog.list.topLevelItemCount() == 1 and dialog.list.topLevelItem(0).text(1) == "changed",
                    timeout=10_000)
    dialog.list.topLevelItem(0).setSelected(True)
    qtbot.mouseClick(dialog.reindex_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: room.indexer.busy, timeout=10_000)
    wait_idle(qtbot, room)
    qtbot.waitUntil(lambda: dialog.list.topLevelItem(0).text(1) == "ready", timeout=10_000)
    texts = ask(qtbot, bridge, lambda store: [r[0] for r in store.db.execute("select text from library_chunks")])
    assert texts == ["Notes\n\nThe pump is green and hums quietly."]
