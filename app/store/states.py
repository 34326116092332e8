"""Records of saved session state files, with the helpers an LRU cache needs.

A saved state is a cache keyed by (conversation, model fingerprint, chat-template fingerprint): one
file per key, replaced when a newer one is recorded. Files live in the states folder; a path inside
it is stored relative, so a moved data folder keeps working. Deleting a record deletes its file.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Callable, Optional

from sqlite_utils import Database

from .errors import NotFoundError
from .records import SavedState

_OWN_FILE = re.compile(r"^c\d+-[0-9a-f]{12}\.[A-Za-z0-9]+$")
"""Names that `new_path` hands out; only these are ever removed as orphans."""


class SavedStates:
    """The `saved_states` table and the files it names. Reached as `store.states`."""

    def __init__(self, db: Database, directory: Path, clock: Callable[[], float]):
        self._db = db
        self.directory = directory
        """Folder where state files are kept (created by `new_path`)."""
        self._clock = clock

    def new_path(self, conversation_id: int, suffix: str = ".state") -> Path:
        """A fresh, unused file path in the states folder for `conversation_id` (folder created)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / f"c{int(conversation_id)}-{uuid.uuid4().hex[:12]}{suffix}"

    def record(self, conversation_id: int, *, model_fingerprint: str, template_fingerprint: str,
               token_count: int, path: Path, nbytes: int, prefix_hash: Optional[str] = None) -> SavedState:
        """Record a state file written for a conversation, replacing (and deleting the file of) an
        older record with the same fingerprints. Returns the new record."""
        now = self._clock()
        key = [conversation_id, model_fingerprint, template_fingerprint]
        with self._db.atomic():
            old = self._rows("conversation_id = ? and model_fingerprint = ? and template_fingerprint = ?", key)
            self._db["saved_states"].delete_where(
                "conversation_id = ? and model_fingerprint = ? and template_fingerprint = ?", key)
            table = self._db["saved_states"].insert({
                "conversation_id": conversation_id, "model_fingerprint": model_fingerprint,
                "template_fingerprint": template_fingerprint, "token_count": token_count,
                "prefix_hash": prefix_hash, "path": self._stored_path(Path(path)), "bytes": nbytes,
                "created_at": now, "last_used_at": now})
            state_id = table.last_pk
        for state in old:
            if state.path != Path(path):
                _unlink(state.path)
        return self.get_by_id(state_id)

    def get(self, conversation_id: int, model_fingerprint: str, template_fingerprint: str) -> Optional[SavedState]:
        """The record for this key, or None."""
        rows = self._rows("conversation_id = ? and model_fingerprint = ? and template_fingerprint = ?",
                          [conversation_id, model_fingerprint, template_fingerprint])
        return rows[0] if rows else None

    def get_by_id(self, state_id: int) -> SavedState:
        rows = self._rows("id = ?", [state_id])
        if not rows:
            raise NotFoundError(f"No saved state {state_id}.")
        return rows[0]

    def for_conversation(self, conversation_id: int) -> list[SavedState]:
        return self._rows("conversation_id = ?", [conversation_id])

    def touch(self, state_id: int) -> None:
        """Mark a state as just used (it moves to the end of `by_last_used`)."""
        cursor = self._db.execute("update saved_states set last_used_at = ? where id = ?",
                                  [self._clock(), state_id])
        if cursor.rowcount == 0:
            raise NotFoundError(f"No saved state {state_id}.")

    def by_last_used(self) -> list[SavedState]:
        """All records, least recently used first: the order to evict in."""
        return self._rows(None, None)

    def total_bytes(self) -> int:
        """Bytes of all recorded state files together."""
        return self._db.execute("select coalesce(sum(bytes), 0) from saved_states").fetchone()[0]

    def delete(self, state_id: int) -> None:
        """Delete a record and its file."""
        state = self.get_by_id(state_id)
        self._db["saved_states"].delete_where("id = ?", [state_id])
        _unlink(state.path)

    def remove_orphans(self) -> int:
        """Delete files that `new_path` named but no record names (left by a crash between
        writing a file and recording it, or between deleting a conversation and its files).
        Other files in the folder are never touched. Returns how many were removed."""
        if not self.directory.is_dir():
            return 0
        known = {s.path for s in self.by_last_used()}
        orphans = [p for p in self.directory.iterdir()
                   if _OWN_FILE.match(p.name) and p.is_file() and p not in known]
        for path in orphans:
            _unlink(path)
        return len(orphans)

    def _stored_path(self, path: Path) -> str:
        try:
            return path.relative_to(self.directory).as_posix()
        except ValueError:
            return str(path)

    def _rows(self, where: Optional[str], args: Optional[list]) -> list[SavedState]:
        rows = self._db["saved_states"].rows_where(where, args, order_by="last_used_at, id")
        return [SavedState(
            id=r["id"], conversation_id=r["conversation_id"], model_fingerprint=r["model_fingerprint"],
            template_fingerprint=r["template_fingerprint"], token_count=r["token_count"],
            prefix_hash=r["prefix_hash"], path=self.directory / r["path"], nbytes=r["bytes"],
            created_at=r["created_at"], last_used_at=r["last_used_at"]) for r in rows]


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)
