"""Text Python holds but UTF-8 cannot encode (lone surrogates: a paste, an imported export with
"\\ud800") is stored with U+FFFD in place of each such code point, wherever text enters the store.
Nothing raises UnicodeEncodeError, and a streamed reply with such a chunk still finishes."""

import json

import pytest

from app.store import ImportFormatError, ReplyStats, export_json, import_json

BAD = "caf\udce9 \ud83d!"  # lone surrogates, e.g. from bytes decoded with surrogateescape
CLEAN = "caf\ufffd \ufffd!"


def test_append_and_edit_message(store):
    c = store.create_conversation()
    m = store.append_message(c.id, "user", BAD)
    assert m.content == CLEAN and store.messages(c.id)[0].content == CLEAN
    assert store.edit_message(m.id, "x" + BAD).content == "x" + CLEAN
    e = store.append_message(c.id, "assistant", "", status="error", error=BAD)
    assert e.error == CLEAN


def test_a_bad_chunk_never_wedges_a_streamed_reply(store):
    c = store.create_conversation()
    reply = store.start_reply(c.id, flush_interval=0)
    reply.append("Hello ")
    reply.append(BAD)  # flushes (interval 0)
    reply.append(" more")
    assert reply.flushed_chars == len("Hello " + BAD + " more")
    done = reply.finish("complete", token_ids=[1, 2], stats=ReplyStats(tok_s=3.0))
    assert (done.content, done.status, done.token_ids) == ("Hello " + CLEAN + " more", "complete", (1, 2))


def test_a_bad_chunk_left_for_finish_and_a_bad_error(store):
    c = store.create_conversation()
    reply = store.start_reply(c.id, flush_interval=3600)
    reply.append(BAD)
    done = reply.fail("engine said " + BAD)
    assert (done.content, done.status, done.error) == (CLEAN, "error", "engine said " + CLEAN)


def test_titles_system_prompts_models_and_sampling(store):
    c = store.create_conversation(BAD, system_prompt=BAD, model=BAD, sampling={"stop": [BAD]})
    assert (c.title, c.system_prompt, c.model, c.sampling) == (CLEAN, CLEAN, CLEAN, {"stop": [CLEAN]})
    c = store.update_conversation(c.id, title="t" + BAD, system_prompt="s" + BAD, sampling={"stop": BAD})
    assert (c.title, c.system_prompt, c.sampling) == ("t" + CLEAN, "s" + CLEAN, {"stop": CLEAN})
    assert store.rename_conversation(c.id, BAD).title == CLEAN
    assert json.loads(export_json(store, c.id))["conversation"]["title"] == CLEAN


def test_search_queries(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", BAD)
    assert store.search("\ud800") == []
    assert [h.message_id for h in store.search("caf\udce9")] == [store.messages(c.id)[0].id]


def test_import_of_an_export_holding_lone_surrogates(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "hi")
    data = json.loads(export_json(store, c.id))
    data["conversation"]["title"] = BAD
    data["messages"][0]["content"] = BAD
    text = json.dumps(data)  # ASCII JSON with "\udce9"-style escapes: json.loads gives lone surrogates
    assert "\\udce9" in text
    copy = import_json(store, text)
    assert copy.title == CLEAN and [m.content for m in store.messages(copy.id)] == [CLEAN]
    copy = import_json(store, data)  # the same as a dict
    assert copy.title == CLEAN and [m.content for m in store.messages(copy.id)] == [CLEAN]


def _file(change):
    data = {"format": "confab.conversation", "version": 1,
            "conversation": {"title": "", "created_at": 1.0, "updated_at": 1.0, "pinned": False, "model": None,
                             "system_prompt": "", "sampling": {}},
            "messages": [{"role": "user", "content": "hi", "status": "complete", "token_ids": None, "error": None,
                          "ttft_s": None, "tok_s": None, "prompt_tokens": None, "completion_tokens": None,
                          "created_at": 1.0, "updated_at": 1.0}]}
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("data, message", [
    (b'{"format": "confab.conversation", "title": "caf\xe9"}', "Not a Confab conversation: the file is not valid JSON"),
    (_file(lambda d: d["conversation"].update(title=5)), "Bad export: conversation: title must be text."),
    (_file(lambda d: d["conversation"].update(model=7)), "Bad export: conversation: model must be text or null."),
    (_file(lambda d: d["conversation"].update(system_prompt=[])),
     "Bad export: conversation: system_prompt must be text."),
    (_file(lambda d: d["conversation"].update(sampling=[])),
     "Bad export: conversation: sampling must be an object of JSON values."),
    (_file(lambda d: d["conversation"].update(sampling={"temperature": float("nan")})),
     "Bad export: conversation: sampling must be an object of JSON values."),
    (_file(lambda d: d["messages"][0].update(error=3)), "Bad export: message 1: error must be text or null."),
])
def test_bad_files_raise_import_format_error(store, data, message):
    with pytest.raises(ImportFormatError) as e:
        import_json(store, data)
    assert str(e.value).startswith(message)
    assert store.list_conversations() == []


def test_the_well_formed_file_of_those_cases_imports(store):
    copy = import_json(store, _file(lambda d: None))
    assert [m.content for m in store.messages(copy.id)] == ["hi"]
