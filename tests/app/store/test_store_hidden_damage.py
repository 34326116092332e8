"""Damage that `PRAGMA integrity_check` does not see: bytes overwritten inside the full-text index
(rebuilt at open, reported, nothing lost) and invalid UTF-8 inside a message's text (read with
U+FFFD; the conversation stays readable and can be continued)."""

import json
import sqlite3

from app.store import export_json, open_store


def _fill(home):
    with open_store(home).store as store:
        ids = []
        for i in range(6):
            c = store.create_conversation(f"c{i}")
            ids.append(c.id)
            for j in range(10):
                store.append_message(c.id, "user", f"message {i} {j} lisbon tram number{j} " * 5)
        store.append_message(ids[0], "assistant", "PAYLOAD-unique-text after the damage")
        return ids, {i: [(m.role, m.content) for m in store.messages(i)] for i in ids}


def _overwrite(path, find, replace, offset=0):
    data = bytearray(path.read_bytes())
    at = data.find(find)
    assert at >= 0 and data.find(find, at + 1) < 0  # the bytes are where we think, once
    data[at + offset: at + offset + len(replace)] = replace
    path.write_bytes(bytes(data))


def _index_blob(db):
    conn = sqlite3.connect(db)
    try:
        return conn.execute("select block from messages_fts_data order by length(block) desc limit 1").fetchone()[0]
    finally:
        conn.close()


def _sound(db):
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("insert into messages_fts(messages_fts) values('integrity-check')")  # raises when damaged
    finally:
        conn.close()


def test_damaged_search_index_is_rebuilt_and_reported(tmp_path):
    home = tmp_path / "home"
    ids, before = _fill(home)
    db = home / "confab.db"
    blob = _index_blob(db)
    _overwrite(db, blob, b"\x55" * 32, offset=len(blob) // 2)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]  # it does not see this
    conn.close()

    opened = open_store(home)
    problem = opened.problem
    assert problem is not None and (problem.kind, problem.moved_to) == ("repaired", None)
    assert problem.message == ("The search index of your conversations was damaged; it was rebuilt from "
                               "your messages, and no message was lost.")
    assert problem.detail.startswith("search index messages_fts: database disk image is malformed")
    with opened.store as store:
        assert {i: [(m.role, m.content) for m in store.messages(i)] for i in ids} == before
        assert len(store.search("lisbon tram number3", limit=100)) == 6
        store.append_message(ids[1], "user", "a new lisbon question")
        reply = store.start_reply(ids[1])
        reply.append("an answer")
        reply.finish("complete")
        assert [h.conversation_id for h in store.search("question")] == [ids[1]]
    _sound(db)
    again = open_store(home)  # repaired for good: nothing to report the next time
    assert again.problem is None
    again.store.close()


def test_invalid_utf8_in_a_message_is_read_with_replacement_characters(tmp_path):
    home = tmp_path / "home"
    ids, before = _fill(home)
    db = home / "confab.db"
    _overwrite(db, b"PAYLOAD-unique-text", b"\xff\xfe\xc3\x28\xa0\xe2", offset=len("PAYLOAD-"))

    opened = open_store(home)
    with opened.store as store:
        messages = store.messages(ids[0])
        damaged = messages[-1].content
        assert damaged == "PAYLOAD-\ufffd\ufffd\ufffd(\ufffd\ufffd-text after the damage"
        assert [(m.role, m.content) for m in messages[:-1]] == before[ids[0]][:-1]
        assert {i: [(m.role, m.content) for m in store.messages(i)] for i in ids[1:]} == \
            {i: before[i] for i in ids[1:]}
        assert json.loads(export_json(store, ids[0]))["messages"][-1]["content"] == damaged
        store.append_message(ids[0], "user", "go on")  # the conversation can be continued
        reply = store.start_reply(ids[0])
        reply.append("continued")
        assert reply.finish("complete").content == "continued"
        assert [h.message_id for h in store.search("payload")] == [messages[-1].id]
    _sound(db)
