"""Deleting one message: it leaves its branch at once, the turns after it stay, Undo puts it back
exactly, and the delete made final at quit leaves the same conversation behind."""

from __future__ import annotations


def _conversation(store, *texts):
    c = store.create_conversation()
    ids = []
    for i, text in enumerate(texts):
        ids.append(store.append_message(c.id, "user" if i % 2 == 0 else "assistant", text).id)
    return c.id, ids


def _texts(store, cid):
    return [m.content for m in store.messages(cid)]


def test_deleting_a_middle_message_keeps_the_turns_after_it_and_undo_restores_it(store):
    cid, ids = _conversation(store, "one", "reply one", "two", "reply two")
    store.delete_message(ids[1])
    assert _texts(store, cid) == ["one", "two", "reply two"]
    assert store.search("reply one") == []  # gone from search too
    store.append_message(cid, "user", "three")  # a new message follows the branch as shown
    assert _texts(store, cid) == ["one", "two", "reply two", "three"]
    store.restore_message(ids[1])
    assert _texts(store, cid) == ["one", "reply one", "two", "reply two", "three"]


def test_a_final_delete_leaves_what_was_shown(store):
    cid, ids = _conversation(store, "one", "reply one", "two", "reply two")
    store.delete_message(ids[1])
    store.delete_message(ids[2])  # two in a row: the branch links through both
    assert store.purge_deleted() == 2
    assert _texts(store, cid) == ["one", "reply two"]
    assert store.messages(cid)[1].parent_id == ids[0]


def test_deleting_a_version_keeps_its_siblings_and_their_branches(store):
    cid, ids = _conversation(store, "Tell a story", "Once upon a time")
    store.append_message(cid, "assistant", "Long ago", parent_id=ids[0])  # a second version
    assert (store.messages(cid)[1].version, store.messages(cid)[1].versions) == (2, 2)
    store.delete_message(store.messages(cid)[1].id)
    shown = store.messages(cid)
    assert [m.content for m in shown] == ["Tell a story", "Once upon a time"]
    assert (shown[1].version, shown[1].versions) == (1, 1)


def test_deleting_the_last_message_makes_the_one_before_it_the_end(store):
    cid, ids = _conversation(store, "one", "reply one")
    store.delete_message(ids[1])
    reply = store.start_reply(cid)  # answers "one" again
    reply.append("again")
    reply.finish("complete", finish_reason="stop")
    assert _texts(store, cid) == ["one", "again"]
