"""The `Store`: conversations, their messages, search, and saved-state records in one SQLite file."""

from __future__ import annotations

import heapq
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from sqlite_utils import Database
from sqlite_utils.db import NotFoundError as RowNotFound

from . import attachments as attached
from . import branches
from . import tool_calls as called
from .attachments import Attachment
from .errors import InvalidValueError, NotFoundError
from .library import Library
from .records import (ROLES, STATUSES, Conversation, Message, ReplyStats, SearchHit, check_choice,
                      check_text, sampling_json, token_ids_json)
from .states import SavedStates

if TYPE_CHECKING:
    from .streaming import ReplyWriter

_UNSET: Any = object()
LEAF: Any = object()
"""Default `parent_id`: the last message of the shown branch."""


class Store:
    """Conversations and messages, stored in a migrated sqlite-utils `Database`.

    Open one with `open_store()` (the user's file, recovered and migrated) or `open_memory_store()`.

    Threads: a SQLite connection belongs to the thread that opened it, and the store keeps it so
    (`check_same_thread`): one thread owns a Store, from `open_store()` to `close()`. The app runs
    every store call on one single-worker executor, so "one job at a time" is the locking scheme;
    using the store from any other thread raises `sqlite3.ProgrammingError`.

    Every write is one short transaction (`db.atomic()`); nothing is held open between calls.

        store = open_memory_store(tmp_path)
        c = store.create_conversation("Trip", system_prompt="Be brief.")
        store.append_message(c.id, "user", "Where to?")
        reply = store.start_reply(c.id)
        reply.append("Lisbon.")
        reply.finish("complete", token_ids=[9, 8], stats=ReplyStats(ttft_s=0.1))
    """

    def __init__(self, db: Database, states_dir: Path, *, clock: Callable[[], float] = time.time):
        self.db = db
        """The sqlite-utils Database (already migrated); for reads and checks, not for the GUI."""
        self.clock = clock
        """Wall-clock seconds used for created/updated/last-used times."""
        self.states = SavedStates(db, Path(states_dir), clock)
        """Saved session state records and their files."""
        self.library = Library(db, clock)
        """Each conversation's library: documents, passages and vectors, and replies' sources."""

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Conversations

    def create_conversation(self, title: str = "", *, model: Optional[str] = None, system_prompt: str = "",
                            sampling: Optional[dict] = None, pinned: bool = False) -> Conversation:
        """Create an empty conversation."""
        _check_settings(title=title, model=model, system_prompt=system_prompt)
        now = self.clock()
        table = self.db["conversations"].insert({
            "title": title, "created_at": now, "updated_at": now, "pinned": int(bool(pinned)),
            "model": model, "system_prompt": system_prompt,
            "sampling": sampling_json({} if sampling is None else sampling)})
        return self.get_conversation(table.last_pk)

    def get_conversation(self, conversation_id: int) -> Conversation:
        try:
            return Conversation.from_row(self.db["conversations"].get(conversation_id))
        except RowNotFound:
            raise NotFoundError(f"No conversation {conversation_id}.") from None

    def list_conversations(self) -> list[Conversation]:
        """All conversations: pinned first, then most recently updated first."""
        rows = self.db["conversations"].rows_where(order_by="pinned desc, updated_at desc, id desc")
        return [Conversation.from_row(r) for r in rows]

    def update_conversation(self, conversation_id: int, *, title: str = _UNSET, model: Optional[str] = _UNSET,
                            system_prompt: str = _UNSET, sampling: dict = _UNSET,
                            pinned: bool = _UNSET, thinking: Optional[bool] = _UNSET) -> Conversation:
        """Change any of a conversation's settings (only the ones passed). Does not move it in
        the list: `updated_at` follows messages, not settings."""
        changes = {"title": title, "model": model, "system_prompt": system_prompt}
        changes = {k: v for k, v in changes.items() if v is not _UNSET}
        _check_settings(**changes)
        if sampling is not _UNSET:
            changes["sampling"] = sampling_json(sampling)
        if pinned is not _UNSET:
            changes["pinned"] = int(bool(pinned))
        if thinking is not _UNSET:
            if thinking is not None and not isinstance(thinking, bool):
                raise InvalidValueError(f"thinking must be None, True or False, not {thinking!r}")
            changes["thinking"] = None if thinking is None else int(thinking)
        self.get_conversation(conversation_id)
        if changes:
            self.db["conversations"].update(conversation_id, changes)
        return self.get_conversation(conversation_id)

    def rename_conversation(self, conversation_id: int, title: str) -> Conversation:
        return self.update_conversation(conversation_id, title=title)

    def set_pinned(self, conversation_id: int, pinned: bool = True) -> Conversation:
        return self.update_conversation(conversation_id, pinned=pinned)

    def delete_conversation(self, conversation_id: int) -> None:
        """Delete a conversation, its messages and its saved states (records and files)."""
        self.get_conversation(conversation_id)
        states = self.states.for_conversation(conversation_id)
        with self.db.atomic():  # messages and saved_states rows go by ON DELETE CASCADE
            self.db["conversations"].delete_where("id = ?", [conversation_id])
        for state in states:  # a crash here leaves orphans; open_store() removes them
            state.path.unlink(missing_ok=True)

    # Messages

    def append_message(self, conversation_id: int, role: str, content: str, *, status: str = "complete",
                       token_ids: Optional[Any] = None, stats: Optional[ReplyStats] = None,
                       error: Optional[str] = None, parent_id: Optional[int] = LEAF,
                       model: Optional[str] = None, finish_reason: Optional[str] = None,
                       reasoning: str = "", reasoning_s: Optional[float] = None,
                       attachments: tuple[Attachment, ...] = (),
                       attachments_from: Optional[int] = None) -> Message:
        """Add a message (one transaction) and return it. It follows `parent_id` (default: the end
        of the shown branch; None: a new first message), and is shown: when that parent already
        has children, it becomes their newest version and the old ones are kept. `attachments`
        are stored with it, in order; `attachments_from` (a message id) gives it copies of that
        message's attachments, bytes included (an edited message's new version keeps its files)."""
        check_choice("role", role, ROLES)
        check_choice("status", status, STATUSES)
        check_text("content", content)
        check_text("reasoning", reasoning)
        check_text("model", model, optional=True)
        now = self.clock()
        with self.db.atomic():
            self.get_conversation(conversation_id)
            if parent_id is LEAF:
                parent_id = branches.leaf_id(self.db, conversation_id)
            elif parent_id is not None and self.get_message(parent_id).conversation_id != conversation_id:
                raise InvalidValueError(f"message {parent_id} is not in conversation {conversation_id}")
            position = self.db.execute(
                "select coalesce(max(position), -1) + 1 from messages where conversation_id = ?",
                [conversation_id]).fetchone()[0]
            table = self.db["messages"].insert({
                "conversation_id": conversation_id, "position": position, "role": role,
                "content": content, "status": status, "token_ids": token_ids_json(token_ids),
                "error": error, **(stats or ReplyStats()).columns(), "created_at": now, "updated_at": now,
                "parent_id": parent_id, "chosen": branches.next_chosen(self.db, conversation_id),
                "model": model, "finish_reason": finish_reason, "reasoning": reasoning,
                "reasoning_s": reasoning_s})
            attached.insert(self.db, table.last_pk, attachments, now)
            if attachments_from is not None:
                attached.copy(self.db, attachments_from, table.last_pk, now)
            self._touch_conversation(conversation_id, now)
        return self.get_message(table.last_pk)

    def messages(self, conversation_id: int) -> list[Message]:
        """The conversation's shown branch, in order: what the user sees, the model is sent, and
        an export holds. Other versions are reached through `versions` / `select_version`."""
        self.get_conversation(conversation_id)
        branch = branches.shown_branch(self.db, conversation_id)
        ids = [b.row["id"] for b in branch]
        files, calls = attached.for_messages(self.db, ids), called.for_messages(self.db, ids)
        sources = self.library.sources_for(ids)
        return [Message.from_row(b.row, b.version, b.versions, files.get(b.row["id"], ()),
                                 calls.get(b.row["id"], ()), sources.get(b.row["id"], ())) for b in branch]

    def get_message(self, message_id: int) -> Message:
        try:
            row = self.db["messages"].get(message_id)
        except RowNotFound:
            raise NotFoundError(f"No message {message_id}.") from None
        ids = [r["id"] for r in branches.siblings(self.db, row)]
        files = attached.for_messages(self.db, [message_id]).get(message_id, ())
        calls = called.for_messages(self.db, [message_id]).get(message_id, ())
        sources = self.library.sources_for([message_id]).get(message_id, ())
        return Message.from_row(row, ids.index(message_id) + 1, len(ids), files, calls, sources)

    def versions(self, message_id: int) -> list[Message]:
        """A message and its other versions (regenerated replies, edited messages), oldest first."""
        self.get_message(message_id)  # NotFoundError
        rows = branches.siblings(self.db, self.db["messages"].get(message_id))
        files = attached.for_messages(self.db, [r["id"] for r in rows])
        calls = called.for_messages(self.db, [r["id"] for r in rows])
        return [Message.from_row(r, i + 1, len(rows), files.get(r["id"], ()), calls.get(r["id"], ()))
                for i, r in enumerate(rows)]

    def attachment_data(self, attachment_id: int) -> Optional[bytes]:
        """The original bytes of an attachment; None when only its text was kept."""
        return attached.data(self.db, attachment_id)

    # Tool calls (MCP tools: tool_calls.py)

    def add_tool_calls(self, message_id: int, calls: tuple[called.ToolCallRecord, ...]) -> Message:
        """Record calls a reply made (status `pending` until `set_tool_result`)."""
        self.get_message(message_id)  # NotFoundError
        with self.db.atomic():
            called.insert(self.db, message_id, calls, self.clock())
        return self.get_message(message_id)

    def set_tool_result(self, call_row_id: int, status: str, result: str) -> Message:
        """Record how a call ended (done, denied or failed) and what the model is sent; returns its message."""
        check_text("result", result)
        with self.db.atomic():
            message_id = called.set_result(self.db, call_row_id, status, result, self.clock())
        return self.get_message(message_id)

    def conversation_servers(self, conversation_id: int) -> list[str]:
        """The MCP servers whose tools this conversation is offered."""
        self.get_conversation(conversation_id)
        return called.servers(self.db, conversation_id)

    def set_conversation_servers(self, conversation_id: int, names: list[str]) -> list[str]:
        self.get_conversation(conversation_id)
        with self.db.atomic():
            called.set_servers(self.db, conversation_id, names)
        return called.servers(self.db, conversation_id)

    def select_version(self, message_id: int, step: int = 0) -> Message:
        """Show the version `step` places from `message_id` among its siblings (-1: the previous,
        +1: the next, 0: this one); the branch below it comes back as it was last shown. Returns
        the message now shown. Nothing is deleted."""
        message = self.get_message(message_id)
        index = message.version - 1 + step
        if not 0 <= index < message.versions:
            raise InvalidValueError(f"message {message_id} has {message.versions} versions; "
                                    f"there is no version {index + 1}")
        chosen = self.versions(message_id)[index]
        with self.db.atomic():
            branches.choose(self.db, chosen.id, message.conversation_id)
        return self.get_message(chosen.id)

    def edit_message(self, message_id: int, content: str) -> Message:
        """Replace a message's text. Its token ids no longer match the text, so they are cleared."""
        check_text("content", content)
        message = self.get_message(message_id)
        now = self.clock()
        with self.db.atomic():
            self.db["messages"].update(message_id, {"content": content, "token_ids": None, "updated_at": now})
            self._touch_conversation(message.conversation_id, now)
        return self.get_message(message_id)

    def set_notice(self, message_id: int, notice: str) -> None:
        """Say something on a message the person should know (e.g. that earlier messages were left
        out of what the model read); "" removes it."""
        check_text("notice", notice)
        self.get_message(message_id)  # NotFoundError for an unknown id
        with self.db.atomic():
            self.db["messages"].update(message_id, {"notice": notice})

    def delete_message(self, message_id: int) -> Message:
        """Take one message off its branch (the turns after it stay, following the one before it);
        kept, flagged, until `purge_deleted`, so `restore_message` undoes it. Returns it."""
        message = self.get_message(message_id)
        with self.db.atomic():
            self.db["messages"].update(message_id, {"deleted": 1})
            self._touch_conversation(message.conversation_id, self.clock())
        return message

    def restore_message(self, message_id: int) -> Message:
        """Undo `delete_message`: the message is back where it was (not after a purge)."""
        with self.db.atomic():
            self.db["messages"].update(self.get_message(message_id).id, {"deleted": 0})
        return self.get_message(message_id)

    def purge_deleted(self) -> int:
        """Make every message delete final (the app quits); returns how many messages went."""
        with self.db.atomic():
            return branches.purge(self.db)

    def truncate_after(self, message_id: int) -> int:
        """Delete every message added after this one in its conversation, on any branch; return
        how many were deleted. The app never does this (regenerate and edit keep versions). Saved states are left for the caller to check against
        the new prefix (their `prefix_hash`)."""
        message = self.get_message(message_id)
        with self.db.atomic():
            cursor = self.db.execute("delete from messages where conversation_id = ? and position > ?",
                                     [message.conversation_id, message.position])
            self._touch_conversation(message.conversation_id, self.clock())
        return cursor.rowcount

    def start_reply(self, conversation_id: int, *, parent_id: Optional[int] = LEAF, model: Optional[str] = None,
                    **options: Any) -> "ReplyWriter":
        """Create an assistant row with status `streaming` after `parent_id` (default: the end of
        the shown branch; a parent that has a reply already gets a new version of it), recording
        the `model` that writes it, and return the writer that fills it. `options` go to
        `ReplyWriter` (flush_interval, monotonic)."""
        from .streaming import ReplyWriter

        return ReplyWriter.start(self, conversation_id, parent_id=parent_id, model=model, **options)

    def continue_reply(self, message_id: int, **options: Any) -> "ReplyWriter":
        """Reopen a finished reply (status back to `streaming`) to write more of it in place, and
        return its writer; its text so far is kept. Only the last message of its branch can be
        continued. `options` go to `ReplyWriter`."""
        from .streaming import ReplyWriter

        return ReplyWriter.resume(self, message_id, **options)

    def recover_interrupted(self) -> int:
        """Mark rows left `streaming` (by a crash or a kill) as `interrupted`; they are kept and
        shown, never deleted. Run once at start, before any reply streams. Returns the count."""
        with self.db.atomic():
            cursor = self.db.execute(
                "update messages set status = 'interrupted' where status = 'streaming'")
        return cursor.rowcount

    # Search

    def search(self, query: str, *, limit: int = 50, mark: tuple[str, str] = ("[", "]"),
               snippet_tokens: int = 12) -> list[SearchHit]:
        """Messages whose text, or an attached file's name or text, matches every word of `query`
        (each word also as a prefix), best first; a match in a file says which ("notes.md: …"). Any text is accepted: FTS syntax characters are quoted, not interpreted, and a NUL
        separates words (FTS5 would read it as the end of the query: "unterminated string"). Only
        messages on a conversation's shown branch are found (other versions are not shown)."""
        words = query.replace("\x00", " ").split()
        if not words:
            return []
        match = " ".join('"{}"*'.format(w.replace('"', '""')) for w in words)
        # Only messages on a shown branch: hidden versions are reached through their message.
        cursor = self.db.execute(
            """select m.conversation_id, m.id, c.title, m.role,
                      snippet(messages_fts, 0, ?, ?, '…', ?) as snippet, messages_fts.rank
               from messages_fts
               join messages m on m.rowid = messages_fts.rowid
               join conversations c on c.id = m.conversation_id
               where messages_fts match ?
               order by messages_fts.rank""",
            [mark[0], mark[1], snippet_tokens, match])
        # Both lists come best first; merged, they are read only as far as needed. A message that
        # matches in its text and in a file is listed once, by its better match.
        ranked = heapq.merge(cursor, attached.search(self.db, match, mark, snippet_tokens), key=lambda r: r[5])
        seen: set[int] = set()
        unique = (r for r in ranked if not (r[1] in seen or seen.add(r[1])))
        rows = _first_shown(self.db, unique, limit)
        return [SearchHit(conversation_id=r[0], message_id=r[1], title=r[2], role=r[3], snippet=r[4])
                for r in rows]

    def _touch_conversation(self, conversation_id: int, now: float) -> None:
        self.db.execute("update conversations set updated_at = ? where id = ?", [now, conversation_id])


def _first_shown(db: Database, rows: Any, limit: int) -> list[tuple]:
    """The first `limit` rows (conversation id, message id, ...) whose message is on its
    conversation's shown branch; reads the cursor only as far as needed."""
    shown: dict[int, set[int]] = {}
    found: list[tuple] = []
    for row in rows:
        if len(found) >= limit:
            break
        if row[0] not in shown:
            shown[row[0]] = {b.row["id"] for b in branches.shown_branch(db, row[0])}
        if row[1] in shown[row[0]]:
            found.append(row)
    return found


def _check_settings(**settings: Any) -> None:
    for name, value in settings.items():
        check_text(name, value, optional=name == "model")
