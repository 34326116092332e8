"""Two processes writing to one database: each write waits for the other's lock (busy timeout)
instead of failing with "database is locked" (every transaction takes the write lock up front)."""

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.store import open_store

HERE = Path(__file__).resolve().parent
COUNT = 500


def _run_writers(home, conversation_ids, count):
    writers = [subprocess.Popen([sys.executable, str(HERE / "store_writer_child.py"), str(home), str(i), str(count)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i in conversation_ids]
    try:
        for w in writers:
            assert w.stdout.readline().strip() == "READY", w.stderr.read()
        for w in writers:  # both start together
            w.stdin.write("go\n")
            w.stdin.flush()
        results = [w.communicate(timeout=120) for w in writers]
    finally:
        for w in writers:
            w.kill()
            w.wait()
    for w, (out, err) in zip(writers, results):
        assert (w.returncode, out.strip(), err) == (0, "DONE", "")


def test_two_processes_append_to_different_conversations(tmp_path):
    home = tmp_path / "home"
    with open_store(home).store as store:
        ids = [store.create_conversation(f"writer {n}").id for n in range(2)]
    _run_writers(home, ids, COUNT)
    with open_store(home).store as store:
        for i in ids:
            messages = store.messages(i)
            assert [m.content for m in messages] == [f"writer {i} message {k}" for k in range(COUNT)]
            assert [m.position for m in messages] == list(range(COUNT))


def test_two_processes_append_to_the_same_conversation(tmp_path):
    """The read (next position) and the write happen under one lock: no position is taken twice."""
    home = tmp_path / "home"
    with open_store(home).store as store:
        c = store.create_conversation("shared")
    _run_writers(home, [c.id, c.id], COUNT // 5)
    with open_store(home).store as store:
        messages = store.messages(c.id)
    assert [m.position for m in messages] == list(range(2 * (COUNT // 5)))
    assert sorted(m.content for m in messages) == sorted(2 * [f"writer {c.id} message {k}" for k in range(COUNT // 5)])


def test_a_transaction_holds_the_write_lock_from_its_start(tmp_path):
    """Even a transaction that has only read so far: another writer must wait, not slip in
    between the read and the write (which would make this one fail at once with BUSY)."""
    home = tmp_path / "home"
    with open_store(home).store as store:
        c = store.create_conversation("one")
        other = sqlite3.connect(home / "confab.db", timeout=0)
        try:
            with store.db.atomic():
                store.messages(c.id)  # a read only
                with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                    other.execute("BEGIN IMMEDIATE")
            other.execute("BEGIN IMMEDIATE")  # free again after the commit
            other.rollback()
        finally:
            other.close()


def test_a_lone_write_outside_a_transaction_is_immediate_too(store):
    statements = []
    store.db.conn.set_trace_callback(statements.append)
    store.db.execute("update conversations set title = 'x' where id = 0")
    store.db.conn.set_trace_callback(None)
    assert statements[0] == "BEGIN IMMEDIATE" and not store.db.conn.in_transaction
