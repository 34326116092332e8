"""Opening the database: pragmas, integrity check, moving a damaged file aside, migrating.

`open_store()` never overwrites or deletes the user's file. A file SQLite cannot read, or one that
fails `PRAGMA integrity_check`, is renamed to `confab.db.corrupt-<time>` (with its -wal and -shm
files), a fresh database is started, and the returned `OpenResult.problem` says so for the GUI to
show. A folder or file that cannot be written raises `StoreReadOnlyError` before anything is
changed; a database from a newer Confab raises `SchemaTooNewError`, also leaving it as it was.

`PRAGMA integrity_check` does not look inside FTS5's index (LESSONS.md): bytes damaged there pass it,
then writes fail with "database disk image is malformed". So each full-text index also runs FTS5's
own `integrity-check` at open, and one that fails is rebuilt from the messages (the text itself is
intact, so nothing is lost); `OpenResult.problem` then says so (kind "repaired").
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal, Optional

from sqlite_utils import Database
from sqlite_utils.db import quote_identifier

from .connection import connect
from .errors import StoreError, StoreReadOnlyError
from .paths import DB_NAME, data_dir, states_dir
from .schema import migrate, schema_version
from .store import Store

BUSY_TIMEOUT_MS = 5000
"""How long a write waits for another connection's lock before failing."""
_SIDE_FILES = ("-wal", "-shm")
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_READONLY_CODES = {3, 8, 14}  # SQLITE_PERM, SQLITE_READONLY, SQLITE_CANTOPEN
_CORRUPT_WORDS = ("file is not a database", "malformed", "corrupt")


@dataclass(frozen=True)
class StoreProblem:
    """Something was wrong with the user's database and was worked around; show `message`."""

    kind: Literal["corrupt", "repaired"]
    """"corrupt": the file could not be read or failed its integrity check, and was moved aside.
    "repaired": the file was kept; a damaged search index in it was rebuilt from the messages."""
    message: str
    """A sentence for the user: what happened and where their old file is."""
    moved_to: Optional[Path]
    """Where the old database now is (its -wal/-shm beside it, same name plus suffix); None when
    it was repaired in place."""
    detail: str
    """SQLite's own words, for a details pane or a bug report."""


@dataclass(frozen=True)
class OpenResult:
    """What `open_store()` did."""

    store: Store
    path: Path
    """The database file now open."""
    problem: Optional[StoreProblem]
    """None when the file opened cleanly."""
    interrupted: int
    """Replies left `streaming` by the last run, now marked `interrupted`."""
    migrated_from: int
    """Schema version the file had (0: new file); equal to SCHEMA_VERSION when nothing ran."""


class _Corrupt(Exception):
    pass


def open_store(home: Optional[Path] = None, *, clock: Callable[[], float] = time.time) -> OpenResult:
    """Open (or create) `confab.db` in `home` (default: `data_dir()`), on the calling thread,
    which then owns the store. Raises StoreReadOnlyError, SchemaTooNewError or StoreError."""
    home = Path(home) if home is not None else data_dir()
    path = home / DB_NAME
    _check_writable(home, path)
    problem = None
    try:
        _check_health(path)
    except _Corrupt as corrupt:
        moved_to = _move_aside(path, clock())
        problem = StoreProblem(
            kind="corrupt", moved_to=moved_to, detail=str(corrupt),
            message=(f"Your conversation database could not be read ({corrupt}). It was kept as "
                     f"{moved_to} and a new, empty one was started."))
    db = _connect(path)
    try:
        schema_version(db)  # a newer Confab's file: raise before anything writes to it
        _configure(db)
        before, _ = migrate(db)
        damaged_index = _repair_search_index(db)
        if damaged_index is not None and problem is None:
            problem = StoreProblem(
                kind="repaired", moved_to=None, detail=damaged_index,
                message=("The search index of your conversations was damaged; it was rebuilt from "
                         "your messages, and no message was lost."))
        store = Store(db, states_dir(home), clock=clock)
        interrupted = store.recover_interrupted()
        store.library.recover_interrupted()  # documents whose indexing the last run left unfinished
        store.states.remove_orphans()
    except sqlite3.DatabaseError as e:
        db.close()
        raise _named(e, path) from None
    except BaseException:
        db.close()
        raise
    return OpenResult(store=store, path=path, problem=problem, interrupted=interrupted,
                      migrated_from=before)


def open_memory_store(states_dir: Path, *, clock: Callable[[], float] = time.time) -> Store:
    """A migrated in-memory store (tests, previews); state files go to `states_dir`."""
    db = connect(":memory:", timeout_s=BUSY_TIMEOUT_MS / 1000)
    db.execute("PRAGMA foreign_keys = ON")
    migrate(db)
    return Store(db, states_dir, clock=clock)


def _check_writable(home: Path, path: Path) -> None:
    advice = "Your conversations were not changed. Make it writable, or set CONFAB_HOME to a writable folder."
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as e:
        raise StoreReadOnlyError(f"Confab cannot write to its data folder {home} ({e.strerror}). {advice}") from None
    for file in [path, *(Path(f"{path}{s}") for s in _SIDE_FILES)]:
        if file.exists() and not os.access(file, os.R_OK | os.W_OK):
            raise StoreReadOnlyError(f"Confab cannot write to its database file {file} (read-only). {advice}")


def _check_health(path: Path) -> None:
    """Run `PRAGMA integrity_check` on a read-only connection; raise _Corrupt for a damaged file.

    Read-only, because a read-write connection that closes may checkpoint the -wal into a damaged
    file and delete it: the check must leave the user's files exactly as they were."""
    if not path.exists():
        return
    conn = None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as e:
        if _is_corrupt(e):
            raise _Corrupt(str(e)) from None
        raise _named(e, path) from None
    finally:
        if conn is not None:
            conn.close()
    if rows != ["ok"]:
        raise _Corrupt("integrity check failed: " + "; ".join(rows[:3]))


def _repair_search_index(db: Database) -> Optional[str]:
    """Run FTS5's `integrity-check` on every full-text index; rebuild each one that fails from
    its content table. Returns SQLite's words about the first failure, or None when all were sound."""
    failure = None
    for table in db.table_names(fts5=True):
        try:
            db.execute(f"insert into {quote_identifier(table)}({quote_identifier(table)}) values('integrity-check')")
        except sqlite3.DatabaseError as e:
            if not _is_corrupt(e):
                raise
            failure = failure or f"search index {table}: {e}"
            db[table].rebuild_fts()
    return failure


def _connect(path: Path) -> Database:
    try:
        return connect(str(path), timeout_s=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.DatabaseError as e:
        raise _named(e, path) from None


def _configure(db: Database) -> None:
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.enable_wal()
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA secure_delete = ON")  # deleted chats are zeroed, not left in free pages
    db.execute("PRAGMA synchronous = FULL")  # a committed flush survives power loss too


def _move_aside(path: Path, now: float) -> Path:
    """Rename the database and its side files to an unused `<name>.corrupt-<time>` name."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    target, n = path.with_name(f"{path.name}.corrupt-{stamp}"), 1
    while any(Path(f"{target}{s}").exists() for s in ("", *_SIDE_FILES)):
        target, n = path.with_name(f"{path.name}.corrupt-{stamp}-{n}"), n + 1
    # Side files first: a -wal left beside a fresh confab.db would be replayed into it.
    for suffix in (*_SIDE_FILES, ""):
        source = Path(f"{path}{suffix}")
        if not source.exists():
            continue
        try:
            os.rename(source, f"{target}{suffix}")
        except OSError as e:
            raise StoreError(
                f"Your conversation database {path} is damaged and could not be moved aside "
                f"({e.strerror}); nothing was deleted. Move it away by hand and restart Confab.") from None
    return target


def _is_corrupt(e: sqlite3.DatabaseError) -> bool:
    code = getattr(e, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return (code & 0xFF) in _CORRUPT_CODES
    return any(word in str(e) for word in _CORRUPT_WORDS)


def _named(e: sqlite3.DatabaseError, path: Path) -> StoreError:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None and (code & 0xFF) in _READONLY_CODES:
        return StoreReadOnlyError(f"Confab cannot open {path} for writing ({e}). Your conversations were not changed.")
    return StoreError(f"Confab cannot open its database {path}: {e}")
