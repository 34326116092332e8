"""A reply's tool calls and results: stored in steps with the reply, answered one by one, sent back
to the model as assistant / tool messages, exported and imported whole; servers per conversation."""

from __future__ import annotations

import json

import pytest

from app.conversations.prompt import chat_messages
from app.store import InvalidValueError, NotFoundError, ToolCallRecord, export_json, export_markdown, import_json


def _turn(store):
    """A reply that called `lookup` after "Let me look.", then wrote an answer."""
    c = store.create_conversation("Tools")
    store.append_message(c.id, "user", "What is the word?")
    reply = store.start_reply(c.id)
    reply.append("Let me look.")
    reply.finish("complete", finish_reason="tool_calls")
    store.add_tool_calls(reply.message_id, (ToolCallRecord(1, len("Let me look."), "abc123def", "test", "lookup", "{}"),))
    return c.id, reply.message_id


def test_calls_wait_then_carry_their_result(store):
    cid, mid = _turn(store)
    (call,) = store.get_message(mid).tool_calls
    assert (call.status, call.result, call.step) == ("pending", "", 1)
    message = store.set_tool_result(call.id, "done", "periwinkle")
    assert message.tool_calls[0].status == "done" and store.messages(cid)[-1].tool_calls[0].result == "periwinkle"


@pytest.mark.parametrize("status", ["pending", "maybe"])
def test_a_result_needs_a_final_status(store, status):
    _cid, mid = _turn(store)
    with pytest.raises(InvalidValueError):
        store.set_tool_result(store.get_message(mid).tool_calls[0].id, status, "x")


def test_an_unknown_call_is_named(store):
    with pytest.raises(NotFoundError, match="No tool call 99"):
        store.set_tool_result(99, "done", "x")


def test_the_model_sees_the_steps_as_calls_and_tool_results(store):
    cid, mid = _turn(store)
    store.set_tool_result(store.get_message(mid).tool_calls[0].id, "done", "periwinkle")
    writer = store.continue_reply(mid)
    writer.append(" The word is periwinkle.")
    writer.finish("complete", finish_reason="stop")
    assert chat_messages(store, cid) == [
        {"role": "user", "content": "What is the word?"},
        {"role": "assistant", "content": "Let me look.",
         "tool_calls": [{"id": "abc123def", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "abc123def", "content": "periwinkle"},
        {"role": "assistant", "content": " The word is periwinkle."},
    ]


def test_a_call_left_unanswered_reads_as_not_run(store):
    cid, _mid = _turn(store)
    assert chat_messages(store, cid)[-1] == {"role": "tool", "tool_call_id": "abc123def", "content": "The call was not run."}


def test_a_forced_call_with_no_text_is_still_history(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "Go")
    reply = store.start_reply(c.id)
    reply.finish("complete", finish_reason="tool_calls")
    store.add_tool_calls(reply.message_id, (ToolCallRecord(1, 0, "id1", "s", "t", "{}", "denied", "no"),))
    assert [m["role"] for m in chat_messages(store, c.id)] == ["user", "assistant", "tool"]


def test_export_and_import_keep_the_calls(store):
    cid, mid = _turn(store)
    store.set_tool_result(store.get_message(mid).tool_calls[0].id, "failed", "The server stopped")
    text = export_json(store, cid)
    copy = import_json(store, text)
    assert export_json(store, copy.id) == text
    assert json.loads(text)["messages"][1]["tool_calls"][0]["status"] == "failed"
    markdown = export_markdown(store, cid)
    assert "<summary>Tool lookup (test): failed</summary>" in markdown and "> The server stopped" in markdown


def test_an_export_with_a_bad_call_is_refused(store):
    cid, _mid = _turn(store)
    data = json.loads(export_json(store, cid))
    data["messages"][1]["tool_calls"][0]["status"] = "exploded"
    with pytest.raises(Exception, match="tool call status"):
        import_json(store, data)


def test_calls_go_with_their_conversation(store):
    cid, _mid = _turn(store)
    store.delete_conversation(cid)
    assert store.db.execute("select count(*) from tool_calls").fetchone()[0] == 0


def test_servers_per_conversation(store):
    a, b = store.create_conversation(), store.create_conversation()
    assert store.set_conversation_servers(a.id, ["web", "files", "web"]) == ["files", "web"]
    assert store.conversation_servers(b.id) == []
    assert store.set_conversation_servers(a.id, []) == []
