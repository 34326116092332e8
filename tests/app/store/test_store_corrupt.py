"""A damaged database is moved aside byte for byte, reported, and replaced by a fresh one."""

import hashlib
import re
import sqlite3
import time

import pytest

from app.store import StoreError, open_store


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _healthy(home):
    with open_store(home).store as store:
        for i in range(20):
            c = store.create_conversation(f"c{i}")
            for j in range(8):
                store.append_message(c.id, "user", f"message {i} {j} " * 30)
    return (home / "confab.db").read_bytes()


def _garbage(home):
    (home / "confab.db").write_bytes(b"these are not the pages you are looking for " * 100)


def _bad_header(home):
    data = bytearray(_healthy(home))
    data[:16] = b"X" * 16
    (home / "confab.db").write_bytes(bytes(data))


def _truncated(home):
    data = _healthy(home)
    (home / "confab.db").write_bytes(data[: len(data) // 2])


def _smashed_page(home):
    data = bytearray(_healthy(home))
    data[4096 * 5: 4096 * 6] = b"\xff" * 4096
    (home / "confab.db").write_bytes(bytes(data))


def _index_mismatch(home):  # opens fine; only PRAGMA integrity_check notices
    _healthy(home)
    conn = sqlite3.connect(home / "confab.db")
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("update sqlite_master set sql = replace(sql, '(\"status\")', '(\"role\")') "
                 "where name = 'idx_messages_status'")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("damage, reason", [
    (_garbage, "(file is not a database)"),
    (_bad_header, "(file is not a database)"),
    (_truncated, "(database disk image is malformed)"),
    (_smashed_page, "(database disk image is malformed)"),
    (_index_mismatch, "(integrity check failed: row 1 missing from index idx_messages_status;"),
])
def test_damaged_database_is_moved_aside_and_reported(tmp_path, damage, reason):
    home = tmp_path / "home"
    home.mkdir()
    damage(home)
    original = sha256(home / "confab.db")

    opened = open_store(home)
    problem = opened.problem
    assert problem is not None and problem.kind == "corrupt"
    assert re.fullmatch(r"confab\.db\.corrupt-\d{8}-\d{6}", problem.moved_to.name)
    assert sha256(problem.moved_to) == original  # the user's file, byte for byte
    assert problem.message.startswith("Your conversation database could not be read " + reason)
    assert problem.message.endswith(f"It was kept as {problem.moved_to} and a new, empty one was started.")
    assert reason.strip("(;)").split(";")[0] in problem.detail

    store = opened.store
    assert store.list_conversations() == []
    c = store.create_conversation("after")
    store.close()
    again = open_store(home)
    assert again.problem is None and [x.title for x in again.store.list_conversations()] == [c.title]
    again.store.close()


def test_side_files_move_with_the_database_and_nothing_is_overwritten(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    _garbage(home)
    (home / "confab.db-wal").write_bytes(b"wal bytes")
    stamp = time.mktime((2026, 1, 2, 3, 4, 5, 0, 0, -1))
    earlier = home / "confab.db.corrupt-20260102-030405"
    earlier.write_bytes(b"an earlier rescue")

    opened = open_store(home, clock=lambda: stamp)
    opened.store.close()
    problem = opened.problem
    assert problem.moved_to.name == "confab.db.corrupt-20260102-030405-1"
    assert earlier.read_bytes() == b"an earlier rescue"
    assert (home / "confab.db.corrupt-20260102-030405-1-wal").read_bytes() == b"wal bytes"
    assert not (home / "confab.db-wal").exists()  # the fresh database's own WAL ended with its close


def test_a_database_that_cannot_be_moved_aside_is_left_in_place(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    _garbage(home)
    original = sha256(home / "confab.db")

    def refuse(*args):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("app.store.db.os.rename", refuse)
    with pytest.raises(StoreError) as e:
        open_store(home)
    assert str(e.value) == (f"Your conversation database {home / 'confab.db'} is damaged and could not be "
                            "moved aside (Permission denied); nothing was deleted. Move it away by hand "
                            "and restart Confab.")
    assert sha256(home / "confab.db") == original and sorted(p.name for p in home.iterdir()) == ["confab.db"]
