"""MCP tools in the chat window, end to end: a stdio server written with FastMCP (tool_server.py),
the tiny random-weight model forced to call a tool in its first step (tool_choice "required"), and
the user's answer in the approval dialog. Approve: the result block shows, is stored and goes back
to the model. Deny, a hung server and a crashed one: the model is told, and the conversation goes on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app.conversations.prompt import chat_messages
from app.mcp.controller import DENIED_TEXT
from app.mcp.room import McpRoom
from app.store import export_json
from engine import SamplingParams
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

SERVER = Path(__file__).with_name("tool_server.py")
WAIT_MS = 120_000  # the server's start (a Python process importing the SDK) is slow on a busy machine
STEP = SamplingParams(temperature=0, max_tokens=40)
"""Room for a forced call (the grammar ends it); the random model's later text stops at 40 tokens."""


def _room(window, bridge, tmp_path, tools: str, timeout_s: float = 60) -> McpRoom:  # noqa: F811
    home = Path(tmp_path / "home")
    home.mkdir(parents=True, exist_ok=True)
    (home / "mcp.json").write_text(json.dumps({
        "mcpServers": {"test": {"command": sys.executable, "args": [str(SERVER), *tools.split()]}},
        "confab": {"stepLimit": 3, "timeoutSeconds": timeout_s}}))
    bridge.params = STEP
    room = McpRoom(window, bridge, home)
    room.controller.require_call = True
    return room


def _conversation(qtbot, window, bridge) -> int:  # noqa: F811
    """A conversation that uses the server, shown in the window."""
    done = []
    bridge.run(lambda store: store.set_conversation_servers(store.create_conversation("Tools").id, ["test"])).success(
        lambda names: done.append(True))
    qtbot.waitUntil(lambda: bool(done), timeout=10_000)
    cid = bridge.run(lambda store: store.list_conversations()[0].id)
    ids = []
    cid.success(ids.append)
    qtbot.waitUntil(lambda: bool(ids), timeout=10_000)
    window.refresh_conversations(select=ids[0])
    qtbot.waitUntil(lambda: window.chat.current_id == ids[0], timeout=10_000)
    return ids[0]


def _store(qtbot, bridge, fn):  # noqa: F811
    out = []
    bridge.run(fn).success(lambda r: out.append(r)).failure(lambda e: out.append(e))
    qtbot.waitUntil(lambda: bool(out), timeout=10_000)
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def _ask_and_answer(qtbot, window, room, button: str):
    window.composer.setPlainText("What is the word of the day?")
    window.composer.submit()
    qtbot.waitUntil(lambda: room.controller.dialog is not None, timeout=WAIT_MS)
    dialog = room.controller.dialog
    getattr(dialog, button).click()
    return dialog


def _reply_done(qtbot, window, bridge, cid):  # noqa: F811
    """Wait until the tool loop ended: no reply running and the last reply no longer waiting."""
    def finished():
        if cid in bridge.replying():
            return False
        last = _store(qtbot, bridge, lambda store: store.messages(cid)[-1])
        return last.role == "assistant" and last.status != "streaming" and last.finish_reason != "tool_calls"
    qtbot.waitUntil(finished, timeout=WAIT_MS)
    return _store(qtbot, bridge, lambda store: store.messages(cid)[-1])


@pytest.fixture
def closing_rooms():
    rooms = []
    yield rooms
    for room in rooms:
        room.close()


def test_an_allowed_call_shows_its_result_stores_it_and_feeds_it_back(qtbot, window, bridge, tmp_path,  # noqa: F811
                                                                      closing_rooms):
    room = _room(window, bridge, tmp_path, "lookup")
    closing_rooms.append(room)
    cid = _conversation(qtbot, window, bridge)
    dialog = _ask_and_answer(qtbot, window, room, "allow_button")
    assert dialog.call.tool == "lookup" and dialog.call.server == "test" and json.loads(dialog.call.arguments) == {}
    reply = _reply_done(qtbot, window, bridge, cid)
    (call,) = reply.tool_calls
    assert (call.status, call.result, call.step) == ("done", "The word is periwinkle.", 1)
    assert reply.status == "complete" and "<tool_call>" not in reply.content
    # the block is in the conversation, collapsed, and opens to show the result
    view = window.chat_view.message_views()[-1]
    block = view.tools.blocks[0]
    assert view.tools.isVisible() and "lookup" in block.header.text() and "done" in block.header.text()
    assert not block.is_open
    block.header.click()
    assert block.is_open and "periwinkle" in block.details.text()
    # the model's next step read the result: it is in the history and in the session's tokens
    history = _store(qtbot, bridge, lambda store: chat_messages(store, cid))
    assert [m["role"] for m in history] == ["user", "assistant", "tool"] + (["assistant"] if reply.content else [])
    assert history[2]["content"] == "The word is periwinkle." and history[1]["tool_calls"][0]["function"]["name"] == "lookup"
    manager = bridge._manager  # read on the store thread, which owns it
    held = bridge._executor.submit(lambda: manager.engine.tokenizer.decode(manager.session_for(cid).tokens)).result()
    assert "periwinkle" in held
    # exported with the conversation
    exported = _store(qtbot, bridge, lambda store: export_json(store, cid))
    assert json.loads(exported)["messages"][-1]["tool_calls"][0]["result"] == "The word is periwinkle."


def test_a_denied_call_is_not_run_and_the_model_is_told(qtbot, window, bridge, tmp_path, closing_rooms):  # noqa: F811
    room = _room(window, bridge, tmp_path, "lookup")
    closing_rooms.append(room)
    cid = _conversation(qtbot, window, bridge)
    _ask_and_answer(qtbot, window, room, "deny_button")
    reply = _reply_done(qtbot, window, bridge, cid)
    (call,) = reply.tool_calls
    assert (call.status, call.result) == ("denied", DENIED_TEXT)
    assert "call lookup" not in room.controller.hub.log_text("test")  # never sent to the server
    assert reply.status == "complete"
    history = _store(qtbot, bridge, lambda store: chat_messages(store, cid))
    assert history[2] == {"role": "tool", "tool_call_id": call.call_id, "content": DENIED_TEXT}
    assert "denied" in window.chat_view.message_views()[-1].tools.blocks[0].header.text()


def test_a_hung_server_times_out_and_the_conversation_goes_on(qtbot, window, bridge, tmp_path, closing_rooms):  # noqa: F811
    room = _room(window, bridge, tmp_path, "hang", timeout_s=3)
    closing_rooms.append(room)
    cid = _conversation(qtbot, window, bridge)
    _ask_and_answer(qtbot, window, room, "allow_button")
    reply = _reply_done(qtbot, window, bridge, cid)
    (call,) = reply.tool_calls
    assert call.status == "failed" and "did not answer the call to hang within 3 s" in call.result
    assert reply.status == "complete"
    assert "timed out" in room.controller.hub.status("test")
    # the conversation goes on: the next message gets a reply (and asks again: the server restarts)
    _ask_and_answer(qtbot, window, room, "deny_button")
    assert _reply_done(qtbot, window, bridge, cid).tool_calls[0].status == "denied"


def test_a_crashed_server_is_reported_and_the_conversation_goes_on(qtbot, window, bridge, tmp_path,  # noqa: F811
                                                                   closing_rooms):
    room = _room(window, bridge, tmp_path, "crash")
    closing_rooms.append(room)
    cid = _conversation(qtbot, window, bridge)
    _ask_and_answer(qtbot, window, room, "always_button")
    reply = _reply_done(qtbot, window, bridge, cid)
    (call,) = reply.tool_calls
    assert call.status == "failed" and "stopped during the call to crash" in call.result
    assert "about to crash" in room.controller.hub.log_text("test")  # its stderr is in its log
    assert reply.status == "complete"
    assert ("test", "crash") in room.controller.always
