"""Attachments are kept with their message: read back in order, found by search, carried by
export/import, copied to an edited message's new version, deleted with their conversation, and
kept across a restart and a migration from the schema before them."""

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.store import Attachment, ImportFormatError, export_json, import_json, open_store
from app.store.export import export_markdown

DATA = Path(__file__).parent / "data"
NOTES = Attachment("notes.md", "text/markdown", 41, "# Plan\nVisit the aquarium on Tuesday.\n")
TABLE = Attachment("prices.csv", "text/csv", 30, "item,price\nticket,19\n", truncated=True,
                   data=b"item,price\nticket,19\nparking,5\n")


def test_attachments_come_back_with_their_message_in_order(store):
    c = store.create_conversation("Trip")
    m = store.append_message(c.id, "user", "What do you think?", attachments=(NOTES, TABLE))
    (shown,) = store.messages(c.id)
    assert shown.id == m.id
    assert [(a.name, a.media_type, a.size, a.text, a.truncated) for a in shown.attachments] == [
        ("notes.md", "text/markdown", 41, NOTES.text, False), ("prices.csv", "text/csv", 30, TABLE.text, True)]
    assert [a.has_data for a in shown.attachments] == [False, True]
    assert store.attachment_data(shown.attachments[1].id) == TABLE.data
    assert store.attachment_data(shown.attachments[0].id) is None
    assert store.get_message(m.id).attachments == shown.attachments


def test_search_finds_text_inside_an_attachment_and_names_the_file(store):
    c = store.create_conversation("Trip")
    m = store.append_message(c.id, "user", "Have a look", attachments=(NOTES,))
    hits = store.search("aquarium")
    assert [(h.conversation_id, h.message_id) for h in hits] == [(c.id, m.id)]
    assert hits[0].snippet.startswith("notes.md: ") and "[aquarium]" in hits[0].snippet
    assert [h.message_id for h in store.search("notes")] == [m.id]  # the file's name too


def test_a_message_matching_in_its_text_and_its_file_is_listed_once(store):
    c = store.create_conversation("Trip")
    m = store.append_message(c.id, "user", "the aquarium plan", attachments=(NOTES,))
    assert [h.message_id for h in store.search("aquarium")] == [m.id]


def test_an_edited_version_keeps_the_attachments_and_both_versions_hold_them(store):
    c = store.create_conversation("Trip")
    old = store.append_message(c.id, "user", "Summarize", attachments=(NOTES, TABLE))
    store.append_message(c.id, "assistant", "A plan.")
    new = store.append_message(c.id, "user", "Summarize briefly", parent_id=None, attachments_from=old.id)
    assert [a.name for a in store.messages(c.id)[0].attachments] == ["notes.md", "prices.csv"]
    assert store.messages(c.id)[0].id == new.id
    assert store.attachment_data(new.attachments[1].id) == TABLE.data
    assert [a.name for a in store.get_message(old.id).attachments] == ["notes.md", "prices.csv"]


def test_export_and_import_carry_attachments_and_their_bytes(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "Look", attachments=(NOTES, TABLE))
    text = export_json(store, c.id)
    files = json.loads(text)["messages"][0]["attachments"]
    assert [f["name"] for f in files] == ["notes.md", "prices.csv"] and "data_base64" in files[1]
    copy = import_json(store, text)
    (m,) = store.messages(copy.id)
    assert [(a.name, a.text, a.truncated) for a in m.attachments] == [
        ("notes.md", NOTES.text, False), ("prices.csv", TABLE.text, True)]
    assert store.attachment_data(m.attachments[1].id) == TABLE.data
    assert export_json(store, copy.id) == text
    assert "*Attached: notes.md, prices.csv*" in export_markdown(store, c.id)


def test_an_export_without_attachments_still_imports(store):
    c = store.create_conversation("Old")
    store.append_message(c.id, "user", "Hi")
    data = json.loads(export_json(store, c.id))
    del data["messages"][0]["attachments"]
    assert store.messages(import_json(store, data).id)[0].attachments == ()


@pytest.mark.parametrize("files, message", [
    ("x", "Bad export: message 1: attachments must be a list."),
    ([{"name": "a", "media_type": "text/plain", "size": -1, "text": ""}],
     "Bad export: message 1: attachment size must be a whole number of bytes."),
    ([{"name": 3, "media_type": "text/plain", "size": 1, "text": ""}],
     "Bad export: message 1: attachment name must be text, not int."),
    ([{"name": "a", "media_type": "text/plain", "size": 1, "text": "", "data_base64": "%%"}],
     "Bad export: message 1: attachment data_base64 is not base64."),
])
def test_a_bad_attachment_in_an_export_is_refused_with_the_reason(store, files, message):
    c = store.create_conversation("Old")
    store.append_message(c.id, "user", "Hi")
    data = json.loads(export_json(store, c.id))
    data["messages"][0]["attachments"] = files
    with pytest.raises(ImportFormatError) as e:
        import_json(store, data)
    assert str(e.value) == message


def test_attachments_go_with_their_conversation(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "Look", attachments=(NOTES,))
    store.delete_conversation(c.id)
    assert store.db["attachments"].count == 0 and store.search("aquarium") == []


def test_attachments_survive_closing_and_reopening_the_file(home):
    store = open_store().store
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "Look", attachments=(NOTES,))
    store.close()
    store = open_store().store
    assert [a.text for a in store.messages(c.id)[0].attachments] == [NOTES.text]
    assert [h.conversation_id for h in store.search("aquarium")] == [c.id]
    store.close()


def test_the_schema_before_attachments_migrates_and_its_messages_take_files(tmp_path):
    """The frozen database of the version just before 0005_attachments gains the table, keeps every
    message, and a new attachment on an old message is found by search."""
    from app.store.schema import MIGRATION_NAMES

    before = MIGRATION_NAMES.index("0005_attachments")  # its version: that many migrations applied
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(DATA / f"confab-v{before}.db", home / "confab.db")
    conn = sqlite3.connect(home / "confab.db")
    assert "attachments" not in {r[0] for r in conn.execute("select name from sqlite_master")}
    conn.close()
    opened = open_store(home)
    store = opened.store
    assert opened.migrated_from == before
    messages = store.messages(1)
    assert [m.attachments for m in messages] == [(), ()]
    store.append_message(1, "user", "And this?", attachments=(NOTES,))
    assert [h.conversation_id for h in store.search("aquarium")] == [1]
    store.close()


def test_the_frozen_database_with_attachments_reads_them(tmp_path):
    from app.store.schema import MIGRATION_NAMES

    version = MIGRATION_NAMES.index("0005_attachments") + 1
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(DATA / f"confab-v{version}.db", home / "confab.db")
    store = open_store(home).store
    assert [a.name for a in store.messages(1)[0].attachments] == ["itinerary.md"]
    assert [h.message_id for h in store.search("Alfama")] == [1]
    store.close()


def test_search_ranks_hits_in_messages_and_files_together_and_stops_at_the_limit(store):
    c = store.create_conversation("Trip")
    for i in range(6):
        store.append_message(c.id, "user", f"aquarium visit {i}")
        store.append_message(c.id, "user", "see file", attachments=(NOTES,))
    hits = store.search("aquarium", limit=5)
    assert len(hits) == 5 and len({h.message_id for h in hits}) == 5
    assert {h.snippet.startswith("notes.md: ") for h in store.search("aquarium")} == {True, False}


def test_an_attachment_keeps_the_count_shown_when_it_was_sent(store):
    c = store.create_conversation("Trip")
    counted = dataclasses.replace(NOTES, tokens=17, tokens_exact=True)
    message = store.append_message(c.id, "user", "see file", attachments=(counted, NOTES))
    (a, b) = store.messages(c.id)[0].attachments
    assert (a.tokens, a.tokens_exact) == (17, True) and (b.tokens, b.tokens_exact) == (None, False)
    edited = store.append_message(c.id, "user", "see the file", parent_id=message.parent_id,
                                  attachments_from=message.id)  # an edit's new version copies the files
    assert [(x.tokens, x.tokens_exact) for x in edited.attachments] == [(17, True), (None, False)]


def test_files_sent_before_counts_were_kept_migrate_without_one(tmp_path):
    from app.store.schema import MIGRATION_NAMES

    for version, expected in ((MIGRATION_NAMES.index("0008_attachment_tokens"), (None, False)),
                              (MIGRATION_NAMES.index("0008_attachment_tokens") + 1, (14, True))):
        home = tmp_path / f"v{version}"
        home.mkdir()
        shutil.copy(DATA / f"confab-v{version}.db", home / "confab.db")
        store = open_store(home).store
        (a,) = store.messages(1)[0].attachments
        assert (a.name, a.tokens, a.tokens_exact) == ("itinerary.md", *expected)
        store.close()
