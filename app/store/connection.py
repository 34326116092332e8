"""The store's SQLite connection: how it locks, and how text crosses into and out of the file.

Three rules, each kept here so that every store call (and sqlite-utils' own writes) follows it:

- **Write lock first.** A deferred transaction that reads and then writes gets SQLITE_BUSY at once
  when another connection writes meanwhile, without waiting for the busy timeout (LESSONS.md). So
  every top-level `atomic()` block starts with `BEGIN IMMEDIATE`: a second writer (another process,
  another connection) waits up to the busy timeout instead of failing with "database is locked".
- **Text that UTF-8 cannot encode is replaced.** Python strings may hold lone surrogates (a paste,
  an imported export with "\\ud800"); SQLite stores UTF-8. Every str parameter is checked as it is
  bound, and each unencodable code point becomes U+FFFD, so the write goes through (one character
  for one: lengths are kept) instead of raising UnicodeEncodeError — and a streamed reply holding such
  a chunk still flushes and finishes.
- **Bytes that are not UTF-8 are read with U+FFFD.** Damage inside a message's text must not make
  the whole conversation unreadable ("Could not decode to UTF-8"): text is decoded with
  errors="replace".
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import contextmanager
from typing import Any, Generator, Iterable

from sqlite_utils import Database

REPLACEMENT = "\ufffd"
"""What an unencodable code point (or an undecodable byte sequence) becomes."""
_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with every code point UTF-8 cannot encode (lone surrogates) replaced by U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub(REPLACEMENT, text)
    return text


def decode_text(data: bytes) -> str:
    """SQLite text to str; an invalid UTF-8 sequence becomes U+FFFD instead of failing the read."""
    return data.decode("utf-8", errors="replace")


def _clean_parameters(parameters: Any) -> Any:
    if isinstance(parameters, dict):
        return {k: clean_text(v) if isinstance(v, str) else v for k, v in parameters.items()}
    if isinstance(parameters, (list, tuple)):
        return [clean_text(v) if isinstance(v, str) else v for v in parameters]
    return parameters  # anything else: let sqlite3 say what is wrong with it


class StoreConnection(sqlite3.Connection):
    """A sqlite3 connection that cleans str parameters on the way in and decodes leniently on
    the way out. Made with `sqlite3.connect(..., factory=StoreConnection)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.text_factory = decode_text

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        return super().execute(sql, _clean_parameters(parameters))

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> sqlite3.Cursor:  # type: ignore[override]
        return super().executemany(sql, (_clean_parameters(p) for p in seq_of_parameters))


class StoreDatabase(Database):
    """sqlite-utils' Database whose top-level `atomic()` takes the write lock up front
    (`BEGIN IMMEDIATE`); nested blocks stay savepoints. sqlite-utils' own writes (insert, update,
    delete_where) use `atomic()` too, so they follow the same rule."""

    @contextmanager
    def atomic(self) -> Generator["Database", None, None]:
        if self.conn.in_transaction:
            with super().atomic():  # a savepoint inside the transaction already open
                yield self
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise


def connect(database: str, *, timeout_s: float) -> StoreDatabase:
    """Open `database` (a path or ":memory:") as a StoreDatabase. check_same_thread stays True:
    the opening thread owns the store. The transaction sqlite3 opens by itself before a lone
    write statement (outside `atomic()`) is immediate too."""
    conn = sqlite3.connect(database, timeout=timeout_s, factory=StoreConnection, isolation_level="IMMEDIATE")
    return StoreDatabase(conn)
