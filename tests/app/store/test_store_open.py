import sqlite3
import threading

import pytest

from app.store import SCHEMA_VERSION, StoreError, open_store, schema_version


def test_first_open_creates_the_database_with_its_pragmas(home):
    opened = open_store()
    db = opened.store.db
    assert opened.path == home / "confab.db" and opened.path.exists()
    assert opened.problem is None and opened.interrupted == 0 and opened.migrated_from == 0
    assert schema_version(db) == SCHEMA_VERSION
    assert db.journal_mode == "wal"
    pragmas = {p: db.execute(f"PRAGMA {p}").fetchone()[0]
               for p in ("foreign_keys", "secure_delete", "busy_timeout", "synchronous")}
    assert pragmas == {"foreign_keys": 1, "secure_delete": 1, "busy_timeout": 5000, "synchronous": 2}
    opened.store.close()


def test_reopen_keeps_everything(home):
    with open_store().store as store:
        c = store.create_conversation("Kept", system_prompt="sys", sampling={"top_k": 40})
        store.append_message(c.id, "user", "hello")
        c = store.get_conversation(c.id)
    opened = open_store()
    with opened.store as store:
        assert opened.migrated_from == SCHEMA_VERSION
        assert store.get_conversation(c.id) == c
        assert [m.content for m in store.messages(c.id)] == ["hello"]


def test_rows_left_streaming_become_interrupted_on_next_open(home):
    with open_store().store as store:
        c = store.create_conversation()
        store.append_message(c.id, "user", "hi")
        reply = store.start_reply(c.id)
        reply.append("partial answer")
        reply.flush()
        # the process "dies" here: the writer never finishes
    opened = open_store()
    with opened.store as store:
        assert opened.interrupted == 1
        last = store.messages(c.id)[-1]
        assert (last.status, last.content) == ("interrupted", "partial answer")
    assert open_store().interrupted == 0  # kept, and not counted again


def test_orphaned_state_files_are_removed_but_nothing_else(home):
    with open_store().store as store:
        c = store.create_conversation()
        kept = store.states.new_path(c.id)
        kept.write_bytes(b"state")
        store.states.record(c.id, model_fingerprint="m", template_fingerprint="t", token_count=3,
                            path=kept, nbytes=5)
        orphan = store.states.new_path(c.id)
        orphan.write_bytes(b"never recorded")
        foreign = store.states.directory / "notes.txt"
        foreign.write_text("the user's own file")
    open_store().store.close()
    assert kept.exists() and foreign.exists() and not orphan.exists()


def test_the_store_belongs_to_the_thread_that_opened_it(home):
    store = open_store().store
    errors = []
    worker = threading.Thread(target=lambda: _try(store.list_conversations, errors))
    worker.start()
    worker.join()
    assert len(errors) == 1 and isinstance(errors[0], sqlite3.ProgrammingError)
    assert "same thread" in str(errors[0])
    store.close()


def _try(fn, errors):
    try:
        fn()
    except Exception as e:
        errors.append(e)


def test_a_locked_database_is_reported_and_never_moved_aside(home, monkeypatch):
    open_store().store.close()
    monkeypatch.setattr("app.store.db.BUSY_TIMEOUT_MS", 50)
    holder = sqlite3.connect(home / "confab.db", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="database is locked"):
            open_store()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert sorted(p.name for p in home.iterdir() if "corrupt" in p.name) == []
