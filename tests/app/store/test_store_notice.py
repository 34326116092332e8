"""A reply's notice (e.g. earlier messages left out to fit the context): stored, read back, exported
to JSON and Markdown, and imported again."""

from __future__ import annotations

import json

import pytest

from app.store import NotFoundError
from app.store.export import export_json, export_markdown, import_json

NOTE = "The conversation was longer than the model's context of 128 tokens: 6 earlier messages left out."


def test_a_notice_is_stored_exported_and_imported(store):
    c = store.create_conversation("c")
    store.append_message(c.id, "user", "Hi")
    reply = store.append_message(c.id, "assistant", "Hello")
    assert reply.notice == ""
    store.set_notice(reply.id, NOTE)
    assert store.get_message(reply.id).notice == NOTE
    assert store.messages(c.id)[-1].notice == NOTE
    exported = export_json(store, c.id)
    assert json.loads(exported)["messages"][1]["notice"] == NOTE
    assert f"*(✂ {NOTE})*" in export_markdown(store, c.id)
    again = import_json(store, exported)
    assert store.messages(again.id)[1].notice == NOTE


def test_an_export_without_notices_imports(store):
    c = store.create_conversation("c")
    store.append_message(c.id, "user", "Hi")
    data = json.loads(export_json(store, c.id))
    del data["messages"][0]["notice"]
    assert store.messages(import_json(store, data).id)[0].notice == ""


def test_a_notice_on_an_unknown_message_is_refused(store):
    with pytest.raises(NotFoundError):
        store.set_notice(999, NOTE)
