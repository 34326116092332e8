"""The bridge: store jobs and streamed replies, callbacks on the GUI thread, stops, overlap."""

from __future__ import annotations

import threading

from app.bridge import EngineNotReadyError, ReplyRunningError, Send
from app.store import open_store
from tests.app.gui_fixtures import LONG, bridge, gui_engine  # noqa: F401 (fixtures)


def stored(home, conversation_id):
    """The conversation's messages, read through a fresh store."""
    opened = open_store(home)
    try:
        return opened.store.messages(conversation_id)
    finally:
        opened.store.close()


def test_run_calls_back_on_the_gui_thread(qtbot, bridge):
    seen = []
    bridge.run(lambda store: (threading.current_thread().name, store.create_conversation("A").id)).success(seen.append)
    qtbot.waitUntil(lambda: bool(seen))
    worker, cid = seen[0]
    assert worker.startswith("confab-store") and cid == 1


def test_run_failure_goes_to_the_handler_or_the_default(qtbot, bridge):
    errors, unhandled = [], []
    bridge.unhandled_error = unhandled.append
    bridge.run(lambda store: store.get_conversation(99)).failure(errors.append)
    bridge.run(lambda store: store.get_conversation(98))
    qtbot.waitUntil(lambda: bool(errors and unhandled))
    assert "No conversation 99" in str(errors[0]) and "No conversation 98" in str(unhandled[0])


def test_send_streams_and_stores(qtbot, bridge, tmp_path):
    cid = _new(qtbot, bridge)
    chunks, done, gui = [], [], threading.current_thread()
    (Send(bridge, cid, "Hello").on_chunk(lambda c: chunks.append((c, threading.current_thread())))
     .success(done.append).run())
    qtbot.waitUntil(lambda: bool(done), timeout=20_000)
    assert all(t is gui for _, t in chunks)
    assert done[0].finish_reason == "length" and done[0].stats.generated_tokens == 12
    assert done[0].text == "".join(c.text for c, _ in chunks)
    bridge.close()
    user, reply = stored(tmp_path / "home", cid)
    assert (user.role, user.content) == ("user", "Hello")
    assert (reply.status, reply.content, len(reply.token_ids)) == ("complete", done[0].text, 12)


def test_stop_keeps_the_reply_as_cancelled(qtbot, bridge, tmp_path):
    cid = _new(qtbot, bridge)
    chunks, done = [], []
    Send(bridge, cid, "Tell me a story", LONG).on_chunk(chunks.append).success(done.append).run()
    qtbot.waitUntil(lambda: bool(chunks), timeout=20_000)
    assert bridge.stop(cid)
    qtbot.waitUntil(lambda: bool(done), timeout=20_000)
    assert done[0].finish_reason == "cancelled" and bridge.replying() == []
    bridge.close()
    reply = stored(tmp_path / "home", cid)[-1]
    assert reply.status == "cancelled" and 0 < len(reply.token_ids) < LONG.max_tokens


def test_two_replies_stream_at_once_and_store_work_goes_on(qtbot, bridge):
    a, b = _new(qtbot, bridge), _new(qtbot, bridge)
    got = {a: [], b: []}
    done = []
    for cid in (a, b):
        Send(bridge, cid, "Go", LONG).on_chunk(got[cid].append).success(done.append).run()
    qtbot.waitUntil(lambda: len(got[a]) > 3 and len(got[b]) > 3, timeout=20_000)
    assert sorted(bridge.replying()) == [a, b] and not done  # both running, both streaming
    listed = []
    bridge.run(lambda store: store.list_conversations()).success(listed.append)
    qtbot.waitUntil(lambda: bool(listed), timeout=5_000)
    assert bridge.replying() and not done  # a store job finished while replies still run
    bridge.stop(a), bridge.stop(b)
    qtbot.waitUntil(lambda: len(done) == 2, timeout=20_000)
    assert {f.finish_reason for f in done} == {"cancelled"}


def test_second_send_while_replying_fails(qtbot, bridge):
    cid = _new(qtbot, bridge)
    errors, done = [], []
    Send(bridge, cid, "One", LONG).success(done.append).run()
    Send(bridge, cid, "Two").failure(errors.append).run()
    qtbot.waitUntil(lambda: bool(errors), timeout=5_000)
    assert isinstance(errors[0], ReplyRunningError)
    bridge.stop(cid)
    qtbot.waitUntil(lambda: bool(done), timeout=20_000)


def test_send_before_the_engine_is_attached_fails(qtbot, qapp, tmp_path):
    from app.bridge import Bridge

    b = Bridge(tmp_path)
    try:
        errors = []
        Send(b, 1, "Hi").failure(errors.append).run()
        qtbot.waitUntil(lambda: bool(errors))
        assert isinstance(errors[0], EngineNotReadyError)
    finally:
        b.close()


def test_a_conversations_own_settings_override_the_defaults(qtbot, bridge, gui_engine):
    cid = _new(qtbot, bridge)
    bridge.run(lambda store: store.update_conversation(cid, system_prompt="Be brief.", sampling={"max_tokens": 3}))
    done = []
    Send(bridge, cid, "Hello").success(done.append).run()  # bridge.params asks for 12 tokens
    qtbot.waitUntil(lambda: bool(done), timeout=20_000)
    assert done[0].stats.generated_tokens == 3
    assert done[0].stats.prompt_tokens > len(gui_engine.tokenizer.encode("Hello")) + 3  # the system prompt too


def test_regenerate_and_edit_refuse_what_they_cannot_do(qtbot, bridge):
    cid = _new(qtbot, bridge)
    failed = []
    Send.regenerate(bridge, cid).failure(failed.append).run()
    qtbot.waitUntil(lambda: bool(failed), timeout=20_000)
    assert "no message to answer again" in str(failed[0])


def _new(qtbot, bridge) -> int:
    ids = []
    bridge.run(lambda store: store.create_conversation().id).success(ids.append)
    qtbot.waitUntil(lambda: bool(ids))
    return ids[0]
