"""Regenerate, edit and Continue through the bridge: nothing is deleted, versions are kept, a cut
reply is extended in place, and each reply records the model that wrote it."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.bridge import Send
from app.store import open_store
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

REPLY_TIMEOUT = 30_000


def _store(home):
    return open_store(home).store


def _run(qtbot, send):
    done, failed = [], []
    send.success(done.append).failure(failed.append).run()
    qtbot.waitUntil(lambda: bool(done or failed), timeout=30_000)
    assert not failed, failed
    return done[0]


def _new(qtbot, bridge) -> int:
    ids = []
    bridge.run(lambda store: store.create_conversation().id).success(ids.append)
    qtbot.waitUntil(lambda: bool(ids))
    return ids[0]


def test_regenerate_keeps_the_old_reply_as_a_version(qtbot, bridge, gui_engine, tmp_path):
    cid = _new(qtbot, bridge)
    first = _run(qtbot, Send(bridge, cid, "Hello"))
    _run(qtbot, Send.regenerate(bridge, cid))
    bridge.close()
    store = _store(tmp_path / "home")
    user, reply = store.messages(cid)
    assert (user.content, reply.version, reply.versions) == ("Hello", 2, 2)
    old = store.versions(reply.id)[0]
    assert (old.content, old.status) == (first.text, "complete")
    assert reply.model == old.model == gui_engine.model.name
    store.close()


def test_edit_keeps_the_old_message_and_what_followed_it(qtbot, bridge, tmp_path):
    cid = _new(qtbot, bridge)
    _run(qtbot, Send(bridge, cid, "first"))
    _run(qtbot, Send(bridge, cid, "second"))
    ids = []
    bridge.run(lambda store: store.messages(cid)[0].id).success(ids.append)
    qtbot.waitUntil(lambda: bool(ids))
    _run(qtbot, Send.edit(bridge, cid, ids[0], "first, better"))
    bridge.close()
    store = _store(tmp_path / "home")
    shown = store.messages(cid)
    assert [m.content for m in shown[:1]] == ["first, better"] and len(shown) == 2
    assert (shown[0].version, shown[0].versions) == (2, 2)
    store.select_version(shown[0].id, -1)
    assert [m.content for m in store.messages(cid)][::2] == ["first", "second"]
    assert store.db["messages"].count == 6
    store.close()


def test_continue_extends_a_reply_cut_by_the_token_limit_in_place(qtbot, bridge, tmp_path):
    cid = _new(qtbot, bridge)
    first = _run(qtbot, Send(bridge, cid, "Count"))
    assert first.finish_reason == "length"
    ids = []
    bridge.run(lambda store: store.messages(cid)[-1]).success(ids.append)
    qtbot.waitUntil(lambda: bool(ids))
    cut = ids[0]
    assert (cut.finish_reason, len(cut.token_ids)) == ("length", 12)
    more = _run(qtbot, Send.continue_reply(bridge, cid, cut.id))
    bridge.close()
    store = _store(tmp_path / "home")
    user, reply = store.messages(cid)
    assert reply.id == cut.id and reply.content == cut.content + more.text
    assert reply.token_ids[:12] == cut.token_ids and len(reply.token_ids) == 24
    assert reply.finish_reason == "length" and reply.status == "complete"
    store.close()


def _send_and_wait(qtbot, window, text):
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.keyClicks(window.composer, text)
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.chat_view.message_views()[-1].shown.id is not None
                    and window.chat_view.message_views()[-1].shown.status != "streaming", timeout=5_000)


def _last(window):
    return window.chat_view.message_views()[-1]


def test_window_regenerate_shows_2_of_2_and_the_old_reply_comes_back(qtbot, window, gui_engine):
    _send_and_wait(qtbot, window, "Hello")
    old = _last(window).shown
    assert _last(window).model_label.text() == gui_engine.model.name
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        window.chat.regenerate()
        assert _last(window).shown.content == "" and _last(window).shown.id is None  # at once
    qtbot.waitUntil(lambda: _last(window).version_label.text() == "2/2" and _last(window).shown.id is not None, timeout=5_000)
    assert not _last(window).version_label.isHidden()
    qtbot.mouseClick(_last(window).previous_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _last(window).shown.id == old.id, timeout=5_000)
    assert _last(window).shown.content == old.content and _last(window).version_label.text() == "1/2"


def test_window_continue_extends_the_cut_reply(qtbot, window):
    _send_and_wait(qtbot, window, "Count")
    cut = _last(window)
    assert cut.note_label.text() == "Stopped at the 12-token limit" and not cut.continue_button.isHidden()
    before = cut.shown
    with qtbot.waitSignal(window.chat.reply_finished, timeout=REPLY_TIMEOUT):
        qtbot.mouseClick(cut.continue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _last(window).shown.status == "complete"
                    and len(_last(window).shown.content) > len(before.content), timeout=5_000)
    after = _last(window).shown
    assert after.id == before.id and after.content.startswith(before.content)
    assert len(window.chat_view.message_views()) == 2
