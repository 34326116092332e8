"""Saved session states as an LRU cache on disk, with a size budget.

A state file is only a shortcut: everything it holds can be rebuilt by re-prefilling the stored
text. So every failure here (a file that is missing, damaged or from another model, a disk that is
full) is logged and answered with "no shortcut", never raised to the user.

Keyed, like the store's records, by (conversation, model fingerprint, template fingerprint): a
state saved under another model or another chat template is never even tried.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Optional, Sequence

from app.store import NotFoundError, SavedState, Store
from engine import AnyEngine, Session
from engine import CapacityError

log = logging.getLogger(__name__)


class StateCache:
    """Writes, restores and evicts the saved states of one engine's conversations."""

    def __init__(self, engine: AnyEngine, store: Store, budget_bytes: int) -> None:
        if budget_bytes < 0:
            raise ValueError(f"state budget must be >= 0 bytes, not {budget_bytes}")
        self.engine = engine
        self.store = store
        self.budget_bytes = budget_bytes
        """Most bytes all saved state files may take together; the least recently used go first."""

    def save(self, conversation_id: int, session: Session) -> Optional[SavedState]:
        """Save an idle session's state (the engine writes it to a temp name, fsyncs, renames),
        record it, and trim the cache to the budget. None when there was nothing worth saving,
        when the state alone is larger than the whole budget (dropped before anything is evicted
        for it), or when saving failed (logged): the conversation then re-prefills next time."""
        tokens = session.tokens
        if not tokens or not self.engine.can_save_state:  # a remote engine resends the history
            return None
        if not self._conversation_exists(conversation_id):  # deleted while live: nothing to keep
            log.debug("conversation %s was deleted; its session state is dropped", conversation_id)
            return None
        path = self.store.states.new_path(conversation_id)
        try:
            session.save_state(path)
            if not self._fits(conversation_id, path):
                path.unlink(missing_ok=True)
                return None
            state = self.store.states.record(
                conversation_id, model_fingerprint=self.engine.model_fingerprint,
                template_fingerprint=self.engine.template_fingerprint, token_count=len(tokens),
                path=path, nbytes=path.stat().st_size, prefix_hash=prefix_hash(tokens))
        except Exception:
            log.warning("could not save the state of conversation %s; it will re-prefill",
                        conversation_id, exc_info=True)
            path.unlink(missing_ok=True)
            return None
        self.trim()
        return state if self._exists(state.id) else None

    def restore(self, conversation_id: int) -> Optional[Session]:
        """A session restored from this conversation's saved state, or None when there is none
        that this engine can use (the unusable record and its file are then deleted, logged).
        CapacityError passes through: that is the caller's problem, not the file's."""
        if not self.engine.can_save_state:
            return None
        state = self.store.states.get(conversation_id, self.engine.model_fingerprint,
                                      self.engine.template_fingerprint)
        if state is None:
            return None
        try:
            session = self.engine.open_session(restore_from=state.path)
        except CapacityError:
            raise
        except Exception as e:
            log.warning("saved state of conversation %s is unusable (%s); re-prefilling from its text",
                        conversation_id, e)
            self.store.states.delete(state.id)
            return None
        self.store.states.touch(state.id)
        return session

    def trim(self) -> int:
        """Delete least recently used states until the total fits the budget; return how many."""
        deleted = 0
        for state in self.store.states.by_last_used():
            if self.store.states.total_bytes() <= self.budget_bytes:
                break
            self.store.states.delete(state.id)
            deleted += 1
        return deleted

    def _fits(self, conversation_id: int, path: Path) -> bool:
        """Whether a state file can be kept at all: one larger than the whole budget would evict
        every other state before being evicted itself."""
        nbytes = path.stat().st_size
        if nbytes <= self.budget_bytes:
            return True
        log.info("state of conversation %s is larger than the whole state budget (%d > %d bytes); "
                 "not saved, nothing evicted: it will re-prefill", conversation_id, nbytes, self.budget_bytes)
        return False

    def _conversation_exists(self, conversation_id: int) -> bool:
        try:
            self.store.get_conversation(conversation_id)
        except NotFoundError:
            return False
        return True

    def _exists(self, state_id: int) -> bool:
        try:
            self.store.states.get_by_id(state_id)
        except NotFoundError:
            return False
        return True


def prefix_hash(tokens: Sequence[int]) -> str:
    """Short hash of token ids, recorded so a later check can tell whether they still lead the
    conversation without storing them twice."""
    return hashlib.sha256(",".join(map(str, tokens)).encode()).hexdigest()[:32]
