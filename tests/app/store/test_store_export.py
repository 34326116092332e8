import json

import pytest

from app.store import ImportFormatError, ReplyStats, export_json, export_markdown, import_json


@pytest.fixture
def conversation(store):
    c = store.create_conversation("Ünïcode & stats", model="bundled:m", system_prompt="Line one\nLine two",
                                  sampling={"temperature": 0.3, "seed": 11}, pinned=True)
    store.append_message(c.id, "system", "extra rules")
    store.append_message(c.id, "user", "Write 日本語 and an emoji 🎉\n\n```py\nprint(1)\n```")
    store.append_message(c.id, "assistant", "Sure: 日本語 🎉", token_ids=[1, 2**40, 3],
                         stats=ReplyStats(ttft_s=0.1 + 0.2, tok_s=1 / 3, prompt_tokens=20, completion_tokens=3))
    store.append_message(c.id, "assistant", "cut sh", status="interrupted")
    store.append_message(c.id, "assistant", "", status="error", error="out of memory")
    return c


def test_json_round_trip_is_lossless(store, conversation):
    text = export_json(store, conversation.id)
    copy = import_json(store, text)
    assert copy.id != conversation.id
    assert export_json(store, copy.id) == text
    original, imported = store.messages(conversation.id), store.messages(copy.id)
    strip = lambda m: {k: v for k, v in vars(m).items() if k not in ("id", "conversation_id", "parent_id")}  # noqa: E731
    assert [strip(m) for m in imported] == [strip(m) for m in original]
    assert {k: v for k, v in vars(copy).items() if k != "id"} == \
        {k: v for k, v in vars(store.get_conversation(conversation.id)).items() if k != "id"}


def test_import_accepts_a_dict_and_marks_streaming_replies_interrupted(store, conversation):
    data = json.loads(export_json(store, conversation.id))
    data["messages"][-1]["status"] = "streaming"
    copy = import_json(store, data)
    assert store.messages(copy.id)[-1].status == "interrupted"


def test_an_import_can_mark_its_title_once(store, conversation):
    marked = import_json(store, export_json(store, conversation.id), title_mark="(imported)")
    assert marked.title == f"{conversation.title} (imported)"
    again = import_json(store, export_json(store, marked.id), title_mark="(imported)")
    assert again.title == marked.title  # not "(imported) (imported)"


def test_imported_text_is_searchable(store, conversation):
    copy = import_json(store, export_json(store, conversation.id))
    assert {h.conversation_id for h in store.search("emoji")} == {conversation.id, copy.id}


def _export(store, conversation, change):
    data = json.loads(export_json(store, conversation.id))
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("change, message", [
    ("not json {", "Not a Confab conversation: the file is not valid JSON"),
    ("[1, 2]", "Not a Confab conversation export (format is 'list')."),
    (lambda d: d.update(format="other.app"), "Not a Confab conversation export (format is 'other.app')."),
    (lambda d: d.update(version=2),
     "This export was made by a newer Confab (format version 2; this one reads up to 1)."),
    (lambda d: d.pop("conversation"), "Bad export: conversation must be an object."),
    (lambda d: d["conversation"].pop("title"), "Bad export: conversation is missing 'title'."),
    (lambda d: d.update(messages={}), "Bad export: 'messages' must be a list."),
    (lambda d: d["messages"][1].pop("content"), "Bad export: message 2 is missing 'content'."),
    (lambda d: d["messages"][0].update(role="bot"),
     "Bad export: message 1: role must be one of system, user, assistant, not 'bot'."),
    (lambda d: d["messages"][3].update(status="?"), "Bad export: message 4: status must be one of"),
    (lambda d: d["messages"][2].update(content=5), "Bad export: message 3: content must be text."),
    (lambda d: d["messages"][2].update(token_ids=["a"]),
     "Bad export: message 3: token_ids must be a list of integers."),
])
def test_import_errors(store, conversation, change, message):
    text = change if isinstance(change, str) else _export(store, conversation, change)
    before = len(store.list_conversations())
    with pytest.raises(ImportFormatError) as e:
        import_json(store, text)
    assert str(e.value).startswith(message)
    assert len(store.list_conversations()) == before  # nothing half-imported


def test_markdown(store, conversation):
    md = export_markdown(store, conversation.id)
    assert md.startswith("# Ünïcode & stats\n\n*Model: bundled:m · Started ")
    assert "**System prompt**\n\n> Line one\n> Line two\n" in md
    assert "## User\n\nWrite 日本語 and an emoji 🎉\n\n```py\nprint(1)\n```\n" in md
    assert "## Assistant\n\ncut sh\n\n*(reply interrupted)*" in md
    assert "*(reply failed: out of memory)*" in md
    assert md.endswith("\n") and not md.endswith("\n\n")


def test_markdown_of_an_untitled_empty_conversation(store):
    c = store.create_conversation()
    assert export_markdown(store, c.id).startswith("# Untitled conversation\n\n*Started ")
