"""Every older schema version opens and migrates with no data lost.

tests/app/store/data/confab-v<N>.db are frozen databases of each version (see make_old_databases.py).
"""

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.store import SCHEMA_VERSION, SchemaTooNewError, open_store, schema_version
from app.store.schema import MIGRATION_NAMES

DATA = Path(__file__).parent / "data"
TABLES = ("conversations", "messages", "saved_states", "attachments", "library_documents", "library_chunks",
          "message_sources")


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(path):
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        names = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        return {t: [dict(r) for r in conn.execute(f"select * from {t} order by id")] for t in TABLES if t in names}
    finally:
        conn.close()


def _schema(db_or_path):
    conn = sqlite3.connect(db_or_path) if isinstance(db_or_path, Path) else db_or_path
    return sorted(conn.execute("select type, name, sql from sqlite_master where name not like 'sqlite_%'"))


def test_a_frozen_database_exists_for_every_version():
    missing = [v for v in range(1, SCHEMA_VERSION + 1) if not (DATA / f"confab-v{v}.db").exists()]
    assert not missing, f"run `python tests/app/store/make_old_databases.py` and commit tests/app/store/data ({missing})"


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_frozen_databases_applied_our_migrations_in_order(version):
    conn = sqlite3.connect(DATA / f"confab-v{version}.db")
    names = [r[0] for r in conn.execute("select name from _sqlite_migrations order by id")]
    conn.close()
    assert names == MIGRATION_NAMES[:version], "a shipped migration was renamed or reordered"


@pytest.mark.parametrize("version", range(SCHEMA_VERSION + 1))
def test_older_version_opens_migrated_with_nothing_lost(tmp_path, version):
    home = tmp_path / "home"
    home.mkdir()
    if version:
        shutil.copy(DATA / f"confab-v{version}.db", home / "confab.db")
    before = _rows(home / "confab.db") if version else {}

    opened = open_store(home)
    store = opened.store
    assert (opened.migrated_from, opened.problem) == (version, None)
    assert schema_version(store.db) == SCHEMA_VERSION
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    fresh = open_store(tmp_path / "fresh").store
    assert _schema(store.db.conn) == _schema(fresh.db.conn), "migrating an old file gave another schema than a new one"
    fresh.close()

    after = {t: {r["id"]: r for r in store.db[t].rows} for t in TABLES}
    for table, rows in before.items():
        for old in rows:
            new = after[table][old["id"]]
            expected = dict(old, status="interrupted") if old.get("status") == "streaming" else old
            assert {k: new[k] for k in old} == expected
    for message in before.get("messages", []):
        word = message["content"].split()[0].strip(",?")
        assert message["id"] in {h.message_id for h in store.search(word)}
    store.close()


def test_a_database_from_a_newer_confab_is_refused_untouched(home):
    open_store().store.close()
    conn = sqlite3.connect(home / "confab.db")
    conn.execute("insert into _sqlite_migrations (migration_set, name, applied_at) "
                 "values ('confab', '0099_from_the_future', 'x')")
    conn.commit()
    conn.close()
    digest = sha256(home / "confab.db")
    with pytest.raises(SchemaTooNewError) as e:
        open_store()
    assert str(e.value) == (
        "This database was written by a newer version of Confab (it has schema changes 0099_from_the_future "
        "that this version does not know). Update Confab to open it; the file was not changed.")
    assert sha256(home / "confab.db") == digest
    assert sorted(p.name for p in home.iterdir()) == ["confab.db"]
