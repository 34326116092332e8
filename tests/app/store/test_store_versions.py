"""Message versions: regenerate and edit add siblings, nothing is deleted, and the shown branch is
what messages, search and export follow."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.store import InvalidValueError, ReplyClosedError, open_store
from app.store.export import export_dict

DATA = Path(__file__).parent / "data"


def _reply(store, cid, text, **kw):
    writer = store.start_reply(cid, **kw)
    writer.append(text)
    return writer.finish("complete", finish_reason="stop")


def _texts(store, cid):
    return [m.content for m in store.messages(cid)]


def test_a_regenerated_reply_is_a_new_version_and_the_old_one_is_kept(store):
    c = store.create_conversation()
    user = store.append_message(c.id, "user", "Tell a story")
    first = _reply(store, c.id, "Once upon a time")
    second = _reply(store, c.id, "Long ago", parent_id=user.id)
    shown = store.messages(c.id)
    assert [m.content for m in shown] == ["Tell a story", "Long ago"]
    assert (shown[1].version, shown[1].versions) == (2, 2)
    assert store.select_version(second.id, -1).id == first.id
    assert _texts(store, c.id) == ["Tell a story", "Once upon a time"]
    assert (store.messages(c.id)[1].version, store.messages(c.id)[1].versions) == (1, 2)
    assert [m.content for m in store.versions(first.id)] == ["Once upon a time", "Long ago"]


def test_an_edited_message_branches_and_each_branch_comes_back_as_it_was(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "Hi")
    _reply(store, c.id, "Hello")
    old = store.append_message(c.id, "user", "Name a fruit")
    _reply(store, c.id, "Apple")
    store.append_message(c.id, "user", "Another")
    _reply(store, c.id, "Pear")
    edited = store.append_message(c.id, "user", "Name a colour", parent_id=old.parent_id)
    _reply(store, c.id, "Blue")
    assert _texts(store, c.id) == ["Hi", "Hello", "Name a colour", "Blue"]
    store.select_version(edited.id, -1)
    assert _texts(store, c.id) == ["Hi", "Hello", "Name a fruit", "Apple", "Another", "Pear"]
    store.select_version(old.id, +1)
    assert _texts(store, c.id) == ["Hi", "Hello", "Name a colour", "Blue"]
    assert store.db["messages"].count == 8  # nothing was deleted


def test_editing_the_first_message_makes_a_second_first_version(store):
    c = store.create_conversation()
    first = store.append_message(c.id, "user", "Hi")
    _reply(store, c.id, "Hello")
    again = store.append_message(c.id, "user", "Hey", parent_id=None)
    assert _texts(store, c.id) == ["Hey"]
    assert (store.get_message(again.id).version, store.get_message(first.id).versions) == (2, 2)


@pytest.mark.parametrize("step", [-1, 2])
def test_select_version_past_the_ends_is_refused(store, step):
    c = store.create_conversation()
    user = store.append_message(c.id, "user", "Hi")
    _reply(store, c.id, "a")
    b = _reply(store, c.id, "b", parent_id=user.id)
    with pytest.raises(InvalidValueError, match="has 2 versions"):
        store.select_version(b.id, step if step > 0 else -2)


def test_a_parent_from_another_conversation_is_refused(store):
    a, b = store.create_conversation(), store.create_conversation()
    m = store.append_message(a.id, "user", "Hi")
    with pytest.raises(InvalidValueError, match="not in conversation"):
        store.append_message(b.id, "user", "x", parent_id=m.id)


def test_search_and_export_follow_the_shown_branch(store):
    c = store.create_conversation("Stories")
    user = store.append_message(c.id, "user", "Tell a story")
    _reply(store, c.id, "A dragon slept")
    _reply(store, c.id, "A wizard woke", parent_id=user.id)
    assert [h.snippet for h in store.search("dragon")] == []
    assert len(store.search("wizard")) == 1
    assert [m["content"] for m in export_dict(store, c.id)["messages"]] == ["Tell a story", "A wizard woke"]


def test_model_and_finish_reason_are_stored_with_the_reply(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "Count")
    writer = store.start_reply(c.id, model="SmolLM2-135M-Instruct")
    writer.append("1, 2,")
    reply = writer.finish("complete", finish_reason="length")
    assert (reply.model, reply.finish_reason) == ("SmolLM2-135M-Instruct", "length")
    assert export_dict(store, c.id)["messages"][-1]["finish_reason"] == "length"


def test_continue_extends_the_same_row_in_place(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "Count")
    writer = store.start_reply(c.id)
    writer.append("1, 2,")
    cut = writer.finish("complete", token_ids=[1, 2], finish_reason="length")
    writer = store.continue_reply(cut.id)
    assert store.get_message(cut.id).status == "streaming"
    writer.append(" 3.")
    done = writer.finish("complete", token_ids=[1, 2, 3], finish_reason="stop")
    assert (done.id, done.content, done.token_ids, done.finish_reason) == (cut.id, "1, 2, 3.", (1, 2, 3), "stop")
    assert len(store.messages(c.id)) == 2


def test_only_the_last_finished_reply_can_be_continued(store):
    c = store.create_conversation()
    user = store.append_message(c.id, "user", "Count")
    old = _reply(store, c.id, "1")
    store.append_message(c.id, "user", "more")
    with pytest.raises(ReplyClosedError, match="not the last message"):
        store.continue_reply(old.id)
    with pytest.raises(ReplyClosedError, match="not a finished reply"):
        store.continue_reply(user.id)


def test_a_version_2_database_becomes_one_branch_per_conversation(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(DATA / "confab-v2.db", home / "confab.db")
    store = open_store(home).store
    lisbon = store.messages(1)
    assert [m.content.split()[0] for m in lisbon] == ["Where", "Try"]
    assert [m.parent_id for m in lisbon] == [None, lisbon[0].id]
    assert all((m.version, m.versions) == (1, 1) for m in lisbon)
    assert [m.status for m in store.messages(2)] == ["complete", "interrupted"]
    # New replies go after the migrated branch, and a regenerate adds a version.
    new = _reply(store, 1, "Or the Time Out Market.", parent_id=lisbon[0].id)
    assert [m.id for m in store.messages(1)] == [lisbon[0].id, new.id]
    assert store.messages(1)[1].versions == 2
    store.close()
