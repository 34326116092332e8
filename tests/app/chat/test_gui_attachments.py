"""Attachments in the window: dropped, pasted or picked files show as chips with a token count
and count in the context meter; a file too big says so and offers the part that fits; binary and
unreadable files are refused with the reason; a large file is read in the background with
progress and can be cancelled; sent files are stored with the message, shown as chips that open
the full text, sent to the model in a named block, kept by a restart, a regenerate and an edit,
and found by search."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent

from app.conversations.prompt import chat_messages
from app.store import open_store
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 30_000
NOTES = "# Trip notes\nVisit the aquarium on Tuesday, then the tram museum.\n"


@pytest.fixture(autouse=True)
def _model_shown(window, gui_engine):
    """The window knows its model's context size (1,024 tokens), as once a model has loaded."""
    window.set_model(gui_engine.model.name, gui_engine.backend, gui_engine.device, gui_engine.capacity,
                     gui_engine.max_context)


def _files_mime(*paths: Path) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    return mime


def _drop(widget, *paths: Path) -> None:
    """Drag files over `widget` and drop them. QApplication drops a synthesized drag event unless a
    real drag is under way, so the events go to the widget's drop filter as Qt would hand them."""
    mime = _files_mime(*paths)
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    assert widget.acceptDrops() and widget.file_drop.eventFilter(widget, enter) and enter.isAccepted()
    drop = QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                      Qt.KeyboardModifier.NoModifier)
    assert widget.file_drop.eventFilter(widget, drop)


def _notes(tmp_path) -> Path:
    path = tmp_path / "notes.md"
    path.write_text(NOTES, encoding="utf-8")
    return path


def _chips(window):
    return [d.chip for d in window.chat.files.tray.drafts]


def _wait_ready(qtbot, window, count=1):
    qtbot.waitUntil(lambda: len(_chips(window)) == count and all(c.state != "reading" for c in _chips(window)),
                    timeout=10_000)


def _send_and_wait(qtbot, window, text):
    window.composer.setPlainText(text)
    window.composer.submit()
    qtbot.waitUntil(lambda: window.current_id is not None and not window.bridge.replying(), timeout=REPLY_TIMEOUT)
    qtbot.waitUntil(lambda: window.chat_view.message_views()
                    and window.chat_view.message_views()[-1].shown.id is not None, timeout=REPLY_TIMEOUT)


def _on_store(qtbot, bridge, fn):
    out = []
    bridge.run(fn).success(out.append)
    qtbot.waitUntil(lambda: bool(out), timeout=REPLY_TIMEOUT)
    return out[0]


def test_a_file_dropped_on_the_window_shows_as_a_chip_counted_in_the_meter(qtbot, window, tmp_path):
    meter = window.chat.context_meter
    before = meter.used + meter.files
    _drop(window, _notes(tmp_path))
    _wait_ready(qtbot, window)
    (chip,) = _chips(window)
    assert chip.state == "ready" and chip.isVisible()
    tokens = (len(NOTES) + 3) // 4
    assert "notes.md" in chip.label.text() and f"~{tokens:,} tokens" in chip.label.text()
    assert meter.files == tokens and meter.text().startswith(f"{before + tokens:,} / ")
    chip.remove_button.click()
    qtbot.waitUntil(lambda: not _chips(window))
    assert meter.files == 0 and not window.chat.files.tray.isVisible()


def test_files_pasted_into_the_composer_are_attached_not_typed(qtbot, window, tmp_path):
    window.composer.insertFromMimeData(_files_mime(_notes(tmp_path)))
    _wait_ready(qtbot, window)
    assert window.composer.toPlainText() == ""
    mime = QMimeData()
    mime.setText("just words")
    window.composer.insertFromMimeData(mime)  # text still pastes as text
    assert window.composer.toPlainText() == "just words" and len(_chips(window)) == 1


@pytest.mark.parametrize("name, data, reason", [
    ("blob.bin", bytes(range(256)) * 4,
     "blob.bin is not a text file (it holds binary data); Confab can attach text, code, Markdown, CSV, JSON and "
     "PDF files, and images."),
    ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
     "photo.png could not be read as an image"),
    ("broken.pdf", b"%PDF-1.7\nthis is not really a pdf\n",
     "broken.pdf could not be read as a PDF: it is damaged"),
    ("empty.txt", b"", "empty.txt is empty: there is no text to attach."),
])
def test_binary_or_unreadable_files_are_refused_with_the_reason(qtbot, window, tmp_path, name, data, reason):
    path = tmp_path / name
    path.write_bytes(data)
    _drop(window, path)
    _wait_ready(qtbot, window)
    (chip,) = _chips(window)
    assert chip.state == "refused" and chip.toolTip().startswith(reason)
    assert window.chat.files.tray.attachments() == () and window.chat.context_meter.files == 0


def test_a_missing_file_and_a_folder_are_refused(qtbot, window, tmp_path):
    window.chat.files.tray.add_paths([tmp_path / "gone.txt", tmp_path])
    _wait_ready(qtbot, window, 2)
    assert [c.toolTip() for c in _chips(window)] == [
        "gone.txt was not found (it may have been moved or deleted).",
        f"{tmp_path.name} is a folder; attach the files in it instead."]


def test_a_file_too_big_for_the_context_offers_the_part_that_fits(qtbot, window, tmp_path):
    big = tmp_path / "report.txt"
    big.write_text("".join(f"Line {i}: the council met and talked about the river.\n" for i in range(2000)))
    _drop(window, big)
    _wait_ready(qtbot, window)
    (chip,) = _chips(window)
    room = window.chat.files.room()
    assert chip.state == "too_big" and chip.fit_button.isVisible()
    assert f"~{room:,} fit" in chip.label.text() and "only about" in chip.toolTip()
    assert window.chat.files.tray.attachments() == ()
    chip.fit_button.click()
    (attachment,) = window.chat.files.tray.attachments()
    assert attachment.truncated and attachment.text.startswith("Line 0: ") and attachment.text.endswith("\n")
    assert window.chat.context_meter.files <= room and "(first part)" in chip.label.text()


def test_a_large_file_is_read_in_the_background_with_progress_and_can_be_cancelled(qtbot, window, tmp_path):
    big = tmp_path / "big.log"
    line = b"2026-11-24 12:00:00 INFO the same line again and again, a long log\n"
    big.write_bytes(line * (12 * (1 << 20) // len(line)))  # 12 MiB: twelve blocks
    values = []
    window.chat.files.tray.add_paths([big])
    (chip,) = _chips(window)
    chip.bar.valueChanged.connect(values.append)
    assert chip.state == "reading" and chip.bar.isVisible()  # add_paths returned before reading it
    _wait_ready(qtbot, window)
    assert any(0 < v < 1000 for v in values), values  # the bar moved while the file was read
    assert chip.state == "too_big"  # ~3M tokens: far more than the tiny model's 1,024
    chip.remove_button.click()
    window.chat.files.tray.add_paths([big])
    (chip,) = _chips(window)
    draft = window.chat.files.tray.drafts[0]
    chip.remove_button.click()  # cancel while reading
    assert draft.cancel.is_set() and _chips(window) == []
    qtbot.wait(200)
    assert _chips(window) == []  # nothing came back for the cancelled read


def test_a_sent_file_is_stored_shown_sent_to_the_model_and_kept_by_a_restart(qtbot, window, tmp_path):
    _drop(window, _notes(tmp_path))
    _wait_ready(qtbot, window)
    _send_and_wait(qtbot, window, "What should we do on Tuesday?")
    assert _chips(window) == [] and window.chat.context_meter.files == 0
    cid = window.current_id
    user = window.chat_view.message_views()[0]
    assert [c.text().split(" · ")[0] for c in user.files.chips] == ["notes.md"]
    assert [c.icon().isNull() for c in user.files.chips] == [False]  # a shipped icon, not an emoji
    viewer = user.files.open(user.shown.attachments[0])
    assert viewer.text.toPlainText() == NOTES
    viewer.close()
    sent = _on_store(qtbot, window.bridge, lambda store: chat_messages(store, cid))
    assert sent[-2]["content"] == f'<file name="notes.md">\n{NOTES.rstrip()}\n</file>\n\nWhat should we do on Tuesday?'
    hits = _on_store(qtbot, window.bridge, lambda store: store.search("aquarium"))
    assert [h.conversation_id for h in hits] == [cid]
    clist = window.conversation_list  # the list's search shows the hit, saying which file
    clist.search.setText("aquarium")
    window.search("aquarium")
    qtbot.waitUntil(lambda: clist.list.count() == 1 and "notes.md: " in clist.list.item(0).toolTip(),
                    timeout=REPLY_TIMEOUT)
    home = tmp_path / "home"
    window.bridge.close()
    store = open_store(home).store
    (a,) = store.messages(cid)[0].attachments
    assert (a.name, a.media_type, a.text, a.has_data) == ("notes.md", "text/markdown", NOTES, False)
    store.close()
    # A restart: a new window on the same data folder shows the file on its message.
    from app.bridge import Bridge
    from app.window.main_window import MainWindow

    again = Bridge(home)
    try:
        restarted = MainWindow(again)
        qtbot.addWidget(restarted)
        restarted.show_conversation(cid)
        qtbot.waitUntil(lambda: len(restarted.chat_view.message_views()) == 2, timeout=REPLY_TIMEOUT)
        chips = restarted.chat_view.message_views()[0].files.chips
        assert len(chips) == 1 and chips[0].text().startswith("notes.md · ~")
    finally:
        again.close()


def test_a_file_sent_alone_titles_the_conversation(qtbot, window, tmp_path):
    _drop(window, _notes(tmp_path))
    _wait_ready(qtbot, window)
    _send_and_wait(qtbot, window, "")
    title = _on_store(qtbot, window.bridge, lambda store: store.get_conversation(window.current_id).title)
    assert title == "notes.md"
    assert window.chat_view.message_views()[0].body.isHidden()


def test_regenerate_and_edit_keep_the_files(qtbot, window, tmp_path):
    _drop(window, _notes(tmp_path))
    _wait_ready(qtbot, window)
    _send_and_wait(qtbot, window, "Plan Tuesday")
    cid = window.current_id
    window.chat.regenerate()
    qtbot.waitUntil(lambda: not window.bridge.replying(), timeout=REPLY_TIMEOUT)
    messages = _on_store(qtbot, window.bridge, lambda store: store.messages(cid))
    assert messages[1].versions == 2 and [a.name for a in messages[0].attachments] == ["notes.md"]
    assert "<file name=\"notes.md\">" in _on_store(qtbot, window.bridge, lambda s: chat_messages(s, cid))[-2]["content"]
    window.chat.edit_and_resend(messages[0].id, "Plan Wednesday instead")
    qtbot.waitUntil(lambda: not window.bridge.replying(), timeout=REPLY_TIMEOUT)
    messages = _on_store(qtbot, window.bridge, lambda store: store.messages(cid))
    assert messages[0].content == "Plan Wednesday instead" and messages[0].versions == 2
    assert [a.text for a in messages[0].attachments] == [NOTES]
    qtbot.waitUntil(lambda: window.chat_view.message_views()[0].shown.id == messages[0].id, timeout=REPLY_TIMEOUT)
    assert len(window.chat_view.message_views()[0].files.chips) == 1


def test_keeping_copies_stores_the_original_bytes(qtbot, window, tmp_path):
    window.chat.files.tray.keep_bytes = True
    path = _notes(tmp_path)
    _drop(window, path)
    _wait_ready(qtbot, window)
    _send_and_wait(qtbot, window, "Keep it")
    cid = window.current_id
    data = _on_store(qtbot, window.bridge, lambda store: store.attachment_data(store.messages(cid)[0].attachments[0].id))
    assert data == path.read_bytes()


def test_the_quick_chat_takes_dropped_and_pasted_files(qtbot, bridge, tmp_path):
    from PySide6.QtWidgets import QApplication

    from app.quick.quick_chat import QuickChat

    quick = QuickChat(bridge)
    qtbot.addWidget(quick)
    quick.set_ready(True)
    quick.context_limit = 1024
    with qtbot.waitActive(quick):
        quick.show_near(None)
    _drop(quick, _notes(tmp_path))
    csv = tmp_path / "prices.csv"
    csv.write_text("item,price\nticket,19\n")
    QApplication.clipboard().setMimeData(_files_mime(csv))
    qtbot.keyClick(quick.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert quick.input.text() == ""  # attached, not pasted as a path
    qtbot.waitUntil(lambda: len(quick.files.attachments()) == 2, timeout=10_000)
    qtbot.keyClicks(quick.input, "Summarize")
    with qtbot.waitSignal(quick.reply_finished, timeout=REPLY_TIMEOUT) as blocker:
        qtbot.keyClick(quick.input, Qt.Key.Key_Return)
    cid = blocker.args[0]
    assert quick.files.attachments() == () and "notes.md" in quick.answer.toPlainText()
    assert quick.question_files == ("notes.md", "prices.csv")  # each after a paperclip icon
    user = _on_store(qtbot, bridge, lambda store: store.messages(cid)[0])
    assert (user.content, [a.name for a in user.attachments]) == ("Summarize", ["notes.md", "prices.csv"])


def test_chips_follow_a_theme_change(qtbot, window, tmp_path, qapp):
    from app.settings.theme import apply_theme

    _drop(window, _notes(tmp_path))
    _wait_ready(qtbot, window)
    (chip,) = _chips(window)
    try:
        for theme, dark in (("dark", True), ("light", False)):
            apply_theme(qapp, theme, 11)
            qtbot.wait(50)
            inside = chip.grab().toImage().pixelColor(6, chip.height() // 2)  # the chip's own fill
            assert (inside.lightness() < 128) == dark, (theme, inside.name())
    finally:
        apply_theme(qapp, "light", 11)


def test_the_attach_button_adds_the_picked_files(qtbot, window, tmp_path, monkeypatch):
    import app.chat.composer_files

    asked = []
    picked = [_notes(tmp_path)]
    monkeypatch.setattr(app.chat.composer_files, "open_files",
                        lambda parent, caption, filters: asked.append((caption, filters)) or picked)
    button = window.chat.files.button
    assert button.isEnabled() and button.accessibleName() == "Attach files"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    _wait_ready(qtbot, window)
    assert asked and "*.pdf" in asked[0][1] and _chips(window)[0].state == "ready"
    window.set_state("loading", "Loading model…")
    assert not button.isEnabled()
