"""A thinking model's reasoning is stored beside its answer (never inside it): streamed and flushed
with it, timed ("Thought for 12 s"), exported and imported, shown apart in Markdown, and left out
of search; a conversation's Think switch is kept."""

from __future__ import annotations

import json

import pytest

from app.store import InvalidValueError, ReplyStats
from app.store.export import export_dict, export_json, export_markdown, import_json


class Ticker:
    """A monotonic clock the test moves by hand."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _reply_with_reasoning(store, tick=None):
    c = store.create_conversation("Sums")
    store.append_message(c.id, "user", "What is 2+2?")
    tick = tick or Ticker()
    writer = store.start_reply(c.id, monotonic=tick)
    tick.t = 1.0
    writer.append("", "The user wants zebrafish ")
    tick.t = 5.0
    writer.append("", "arithmetic.")
    tick.t = 13.0
    writer.append("It is ", "")
    tick.t = 20.0  # answering is not thinking
    writer.append("4.")
    message = writer.finish("complete", token_ids=[1, 2], stats=ReplyStats(ttft_s=0.1), finish_reason="stop")
    return c, message


def test_reasoning_is_kept_apart_with_how_long_it_took(store):
    c, message = _reply_with_reasoning(store)
    assert message.content == "It is 4."
    assert message.reasoning == "The user wants zebrafish arithmetic."
    assert message.reasoning_s == 12.0  # first reasoning to the start of the answer
    assert store.messages(c.id)[-1].reasoning == message.reasoning


def test_streamed_reasoning_reaches_the_disk_before_the_answer(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "hi")
    tick = Ticker()
    writer = store.start_reply(c.id, monotonic=tick)
    writer.append("", "thinking hard")
    tick.t = 0.3
    assert writer.append("", " still") is True  # a crash now keeps what was thought
    row = store.get_message(writer.message_id)
    assert (row.content, row.reasoning, row.status) == ("", "thinking hard still", "streaming")
    assert row.reasoning_s == pytest.approx(0.3)


def test_a_reply_without_reasoning_has_none(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "hi")
    writer = store.start_reply(c.id)
    writer.append("Hello!")
    message = writer.finish()
    assert (message.reasoning, message.reasoning_s) == ("", None)


def test_search_finds_the_answer_not_the_reasoning(store):
    c, message = _reply_with_reasoning(store)
    assert store.search("zebrafish") == []
    assert [h.message_id for h in store.search("It is 4")] == [message.id]


def test_json_export_and_import_carry_reasoning_and_the_switch(store):
    c, message = _reply_with_reasoning(store)
    store.update_conversation(c.id, thinking=False)
    text = export_json(store, c.id)
    copy = import_json(store, text)
    assert copy.thinking is False
    imported = store.messages(copy.id)[-1]
    assert (imported.reasoning, imported.reasoning_s) == (message.reasoning, 12.0)
    assert export_json(store, copy.id) == text  # lossless


def test_an_older_export_without_reasoning_imports(store):
    c, _ = _reply_with_reasoning(store)
    data = export_dict(store, c.id)
    del data["conversation"]["thinking"]
    for m in data["messages"]:
        del m["reasoning"], m["reasoning_s"]
    copy = import_json(store, json.dumps(data))
    assert copy.thinking is None and store.messages(copy.id)[-1].reasoning == ""


@pytest.mark.parametrize("change, message", [
    (lambda d: d["messages"][1].update(reasoning=7), "message 2: reasoning must be text"),
    (lambda d: d["messages"][1].update(reasoning_s="long"), "message 2: reasoning_s must be a number or null"),
    (lambda d: d["conversation"].update(thinking="yes"), "thinking must be true, false or null"),
])
def test_bad_reasoning_in_an_export_is_refused_by_name(store, change, message):
    from app.store import ImportFormatError

    c, _ = _reply_with_reasoning(store)
    data = export_dict(store, c.id)
    change(data)
    with pytest.raises(ImportFormatError, match=message):
        import_json(store, data)


def test_markdown_shows_the_reasoning_collapsed_above_the_answer(store):
    c, _ = _reply_with_reasoning(store)
    text = export_markdown(store, c.id)
    block = ("<details>\n<summary>Thought for 12 s</summary>\n\n> The user wants zebrafish arithmetic.\n\n"
             "</details>\n\nIt is 4.")
    assert block in text


def test_the_think_switch_is_kept_per_conversation(store):
    a, b = store.create_conversation(), store.create_conversation()
    assert a.thinking is None
    store.update_conversation(a.id, thinking=True)
    store.update_conversation(b.id, thinking=False)
    assert (store.get_conversation(a.id).thinking, store.get_conversation(b.id).thinking) == (True, False)
    assert store.update_conversation(a.id, thinking=None).thinking is None
    with pytest.raises(InvalidValueError, match="thinking must be None, True or False"):
        store.update_conversation(a.id, thinking="on")
