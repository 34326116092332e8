"""Sending with attached files: a file that does not fit (or could not be read) is never dropped
without a word, and each file's token count is one number, the same on the composer's chip, on
the sent message and after a restart (exact where the model's tokenizer is here, "~" where not)."""

from __future__ import annotations

import pytest

from app.store import open_store
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 30_000
CODE = "".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n\n" for i in range(12))


@pytest.fixture(autouse=True)
def _model_shown(window, gui_engine):
    window.set_model(gui_engine.model.name, gui_engine.backend, gui_engine.device, gui_engine.capacity,
                     gui_engine.max_context)


def _add(qtbot, window, *paths):
    tray = window.chat.files.tray
    tray.add_paths(list(paths))
    qtbot.waitUntil(lambda: len(tray.drafts) >= len(paths) and all(d.chip.state != "reading" for d in tray.drafts),
                    timeout=10_000)
    return [d.chip for d in tray.drafts]


def _send(window, text):
    window.composer.setPlainText(text)
    window.composer.submit()


def _wait_reply(qtbot, window):
    qtbot.waitUntil(lambda: window.current_id is not None and not window.bridge.replying(), timeout=REPLY_TIMEOUT)
    qtbot.waitUntil(lambda: window.chat_view.message_views()
                    and window.chat_view.message_views()[-1].shown.id is not None, timeout=REPLY_TIMEOUT)


def _count_on(chip_text: str) -> str:
    return chip_text.rsplit(" · ", 1)[1]


@pytest.mark.parametrize("exact", [True, False])
def test_a_file_that_does_not_fit_stays_and_the_message_waits_with_the_reason(qtbot, window, gui_engine,
                                                                             tmp_path, exact):
    window.set_token_counter(gui_engine.count_tokens if exact else None)
    big = tmp_path / "report.txt"
    big.write_text("".join(f"Line {i}: the council met and talked about the river.\n" for i in range(2000)))
    notes = tmp_path / "notes.md"
    notes.write_text("Visit the aquarium on Tuesday.\n")
    big_chip, _ = _add(qtbot, window, big, notes)
    assert big_chip.state == "too_big"
    _send(window, "Summarize the report")
    qtbot.wait(300)
    assert window.current_id is None and not window.chat_view.message_views(), "nothing was sent"
    assert window.composer.toPlainText() == "Summarize the report", "the question is kept"
    assert [d.chip for d in window.chat.files.tray.drafts][0] is big_chip and big_chip.state == "too_big"
    assert len(window.chat.files.tray.drafts) == 2, "the file that fits stays too"
    notice = window.notices.text
    assert "report.txt" in notice and "does not fit" in notice and "Attach the first part" in notice
    why = window.chat.files.why  # said under the chips too, where the user looks
    assert not why.isHidden() and "report.txt does not fit" in why.text()
    big_chip.fit_button.click()  # the user's word: its first part
    qtbot.waitUntil(lambda: big_chip.state == "ready", timeout=10_000)
    assert why.isHidden()
    window.composer.submit()
    _wait_reply(qtbot, window)
    user = window.chat_view.message_views()[0]
    assert [c.text().split(" · ")[0] for c in user.files.chips] == ["report.txt (first part)", "notes.md"]


def test_an_unreadable_file_is_not_dropped_silently_either(qtbot, window, tmp_path):
    blob = tmp_path / "photo.bin"
    blob.write_bytes(bytes(range(256)) * 40)
    (chip,) = _add(qtbot, window, blob)
    assert chip.state == "refused"
    _send(window, "What is in it?")
    qtbot.wait(300)
    assert window.current_id is None and window.composer.toPlainText() == "What is in it?"
    assert "photo.bin is not a text file" in window.notices.text and "×" in window.notices.text
    chip.remove_button.click()  # the user lets it go: now the message goes without it
    window.composer.submit()
    _wait_reply(qtbot, window)


@pytest.mark.parametrize("exact", [True, False])
def test_each_files_count_is_the_same_on_the_chip_the_sent_message_and_after_a_restart(
        qtbot, window, gui_engine, tmp_path, exact):
    window.set_token_counter(gui_engine.count_tokens if exact else None)
    script = tmp_path / "script.py"
    script.write_text(CODE)
    (chip,) = _add(qtbot, window, script)
    before = _count_on(chip.label.text())
    assert before.startswith("~") is not exact
    if exact:
        assert before == f"{gui_engine.count_tokens(CODE):,} tokens"
    _send(window, "What does it do?")
    _wait_reply(qtbot, window)
    (sent,) = window.chat_view.message_views()[0].files.chips
    assert _count_on(sent.text()) == before
    cid = window.current_id
    home = tmp_path / "home"
    window.bridge.close()
    store = open_store(home).store
    (stored,) = store.messages(cid)[0].attachments
    store.close()
    assert stored.tokens is not None and f"{stored.tokens:,} tokens" in before and stored.tokens_exact is exact
    from app.bridge import Bridge
    from app.window.main_window import MainWindow

    again = Bridge(home)
    try:
        restarted = MainWindow(again)
        qtbot.addWidget(restarted)
        restarted.show_conversation(cid)
        qtbot.waitUntil(lambda: len(restarted.chat_view.message_views()) == 2, timeout=REPLY_TIMEOUT)
        (chip_after,) = restarted.chat_view.message_views()[0].files.chips
        assert _count_on(chip_after.text()) == before
    finally:
        again.close()


def test_an_empty_file_is_said_to_be_empty_when_the_message_waits(qtbot, window, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    (chip,) = _add(qtbot, window, empty)
    assert chip.state == "refused"
    _send(window, "Summarise it")
    qtbot.wait(300)
    notice = window.notices.text
    assert "empty.txt is empty: there is no text to attach. Remove it (×)" in notice, notice
    assert "could not be read" not in notice
