"""The schema: ordered migrations on one sqlite-utils `Migrations` registry.

A database's schema version is how many of these migrations it has applied (they apply in order,
each once, in its own transaction, recorded in `_sqlite_migrations`). A shipped migration is never
edited, renamed or reordered: change the schema by adding one at the end, and freeze a database of
the version before it with `tests/app/store/make_old_databases.py` so the migration test covers it
(GPT4All once shipped a format change that made old chats unloadable: LESSONS.md).
"""

from __future__ import annotations

from typing import Callable

from sqlite_utils import Database, Migrations
from sqlite_utils.db import ForeignKey

from .errors import SchemaTooNewError

migrations = Migrations("confab")
MIGRATION_NAMES: list[str] = []
"""Names of the registered migrations, in order; version N means the first N are applied."""


def _migration(name: str) -> Callable:
    def register(fn: Callable[[Database], None]) -> Callable[[Database], None]:
        MIGRATION_NAMES.append(name)
        return migrations(name=name)(fn)

    return register


def _cascade(table: str, column: str, other: str) -> ForeignKey:
    return ForeignKey(table, column, other, "id", on_delete="CASCADE")


@_migration("0001_core")
def core(db: Database) -> None:
    """Conversations, their messages, and records of saved session state files."""
    db["conversations"].create(
        {"id": int, "title": str, "created_at": float, "updated_at": float, "pinned": int,
         "model": str, "system_prompt": str, "sampling": str},
        pk="id",
        not_null=["title", "created_at", "updated_at", "pinned", "system_prompt", "sampling"],
        defaults={"title": "", "pinned": 0, "system_prompt": "", "sampling": "{}"},
    )
    db["conversations"].create_index(["pinned", "updated_at"])
    db["messages"].create(
        {"id": int, "conversation_id": int, "position": int, "role": str, "content": str,
         "status": str, "token_ids": str, "error": str, "ttft_s": float, "tok_s": float,
         "prompt_tokens": int, "completion_tokens": int, "created_at": float, "updated_at": float},
        pk="id",
        foreign_keys=[_cascade("messages", "conversation_id", "conversations")],
        not_null=["conversation_id", "position", "role", "content", "status", "created_at", "updated_at"],
        defaults={"content": "", "status": "complete"},
    )
    db["messages"].create_index(["conversation_id", "position"], unique=True)
    db["messages"].create_index(["status"])  # finds rows left `streaming` at start without a scan
    db["saved_states"].create(
        {"id": int, "conversation_id": int, "model_fingerprint": str, "template_fingerprint": str,
         "token_count": int, "prefix_hash": str, "path": str, "bytes": int,
         "created_at": float, "last_used_at": float},
        pk="id",
        foreign_keys=[_cascade("saved_states", "conversation_id", "conversations")],
        not_null=["conversation_id", "model_fingerprint", "template_fingerprint", "token_count",
                  "path", "bytes", "created_at", "last_used_at"],
    )
    db["saved_states"].create_index(
        ["conversation_id", "model_fingerprint", "template_fingerprint"], unique=True)
    db["saved_states"].create_index(["last_used_at"])


@_migration("0002_message_search")
def message_search(db: Database) -> None:
    """Full-text search over message text (FTS5, kept current by triggers; indexes existing rows)."""
    db["messages"].enable_fts(["content"], create_triggers=True)


@_migration("0003_message_versions")
def message_versions(db: Database) -> None:
    """Messages form a tree of versions (branches.py): `parent_id` links each message to the one it
    follows and `chosen` picks the shown sibling. Existing conversations become one branch, each
    message the child of the one before it. Replies also record which model wrote them (`model`,
    its display name) and why they ended (`finish_reason`: the engine's "stop", "length", ...)."""
    messages = db["messages"]
    messages.add_column("parent_id", int)
    messages.add_column("chosen", int, not_null_default=0)
    messages.add_column("model", str)
    messages.add_column("finish_reason", str)
    db.execute("""update messages set parent_id = (
                      select p.id from messages p
                      where p.conversation_id = messages.conversation_id and p.position < messages.position
                      order by p.position desc limit 1)""")
    messages.create_index(["conversation_id", "parent_id"])


@_migration("0004_reasoning")
def reasoning(db: Database) -> None:
    """A thinking model's reasoning is kept beside its answer, never inside `content` (so search,
    titles and what is sent back to the model see only the answer): `reasoning` (its text, "" for
    replies without) and `reasoning_s` (how long it thought, for "Thought for 12 s"; None when
    unknown). A conversation's Think switch is `thinking`: None (the model's default), 0 or 1."""
    db["messages"].add_column("reasoning", str, not_null_default="")
    db["messages"].add_column("reasoning_s", float)
    db["conversations"].add_column("thinking", int)


@_migration("0005_attachments")
def attachments(db: Database) -> None:
    """Files attached to a message (attachments.py): name, media type, size in bytes, the text
    sent to the model, whether only the part that fit was attached, and optionally the original
    bytes. Searchable (FTS5 over name and text, kept current by triggers). Self-contained: it only
    adds a table, so it may be renumbered after other migrations."""
    db["attachments"].create(
        {"id": int, "message_id": int, "position": int, "name": str, "media_type": str, "size": int,
         "text": str, "truncated": int, "data": bytes, "created_at": float},
        pk="id",
        foreign_keys=[_cascade("attachments", "message_id", "messages")],
        not_null=["message_id", "position", "name", "media_type", "size", "text", "truncated", "created_at"],
        defaults={"text": "", "truncated": 0},
    )
    db["attachments"].create_index(["message_id", "position"], unique=True)
    db["attachments"].enable_fts(["name", "text"], create_triggers=True)


@_migration("0006_tool_calls")
def tool_calls(db: Database) -> None:
    """Tool calls a reply made and their results (tool_calls.py), in steps, each placed at an offset
    of the reply's text; and which MCP servers each conversation may use. Self-contained: it only
    adds tables, so it may be renumbered after other migrations."""
    db["tool_calls"].create(
        {"id": int, "message_id": int, "position": int, "step": int, "offset": int, "call_id": str,
         "server": str, "tool": str, "arguments": str, "status": str, "result": str,
         "created_at": float, "updated_at": float},
        pk="id",
        foreign_keys=[_cascade("tool_calls", "message_id", "messages")],
        not_null=["message_id", "position", "step", "offset", "call_id", "server", "tool", "arguments",
                  "status", "result", "created_at", "updated_at"],
        defaults={"server": "", "result": "", "status": "pending"},
    )
    db["tool_calls"].create_index(["message_id", "position"], unique=True)
    db["conversation_servers"].create(
        {"conversation_id": int, "server": str},
        pk=("conversation_id", "server"),
        foreign_keys=[_cascade("conversation_servers", "conversation_id", "conversations")],
        not_null=["conversation_id", "server"],
    )


@_migration("0007_reply_notice")
def reply_notice(db: Database) -> None:
    """A reply's `notice`: what the person should know about how it was made, shown on it; today
    that earlier messages were left out to fit the model's context (engine.truncation). "" for
    none. Self-contained: it only adds a column, so it may be renumbered after other migrations."""
    db["messages"].add_column("notice", str, not_null_default="")


@_migration("0008_attachment_tokens")
def attachment_tokens(db: Database) -> None:
    """Each attachment keeps the token count the composer showed for it when it was sent
    (`tokens`; None for files sent before, which show the estimate) and whether that was the
    model's own count (`tokens_exact`), so the sent message shows the same number. Self-contained:
    it only adds columns, so it may be renumbered after other migrations."""
    db["attachments"].add_column("tokens", int)
    db["attachments"].add_column("tokens_exact", int, not_null_default=0)


@_migration("0009_message_deleted")
def message_deleted(db: Database) -> None:
    """A message the user deleted stays, flagged (`deleted` = 1), until the delete is final (at
    quit), so Undo can bring it back; the branch sees through it (branches.py). Self-contained: it
    only adds a column, so it may be renumbered after other migrations."""
    db["messages"].add_column("deleted", int, not_null_default=0)


@_migration("0010_attachment_images")
def attachment_images(db: Database) -> None:
    """An attached image (media type image/…) keeps its bytes in `data` (always: the image is what
    the model read, not a copy on request), its size in pixels as sent (`width`, `height`), and,
    when Confab scaled a large photo down before sending it, the size it had
    (`source_width`, `source_height`; None when sent as it was); `thumbnail` is a small PNG of it,
    so the history shows it without decoding the image. None for other files.
    Self-contained: it only adds columns, so it may be renumbered after other migrations."""
    for column in ("width", "height", "source_width", "source_height"):
        db["attachments"].add_column(column, int)
    db["attachments"].add_column("thumbnail", bytes)


@_migration("0011_library")
def library(db: Database) -> None:
    """A conversation's library (library.py): documents too large for its context, each file in
    `library_documents` (where it came from, its size, modification time and content hash, so a
    change is seen; its `status` and, when indexing failed, why), cut into `library_chunks` (the
    passage, where it stands: page and heading path, and its embedding `vector` as float32 bytes,
    searched with numpy), with FTS5 over the chunks' text (porter stemming) for exact words.
    `message_sources` keeps which passages a reply read, with a copy of each passage's text, so a
    reply can be re-read after its document was removed or re-indexed (then `chunk_id` is NULL).
    Self-contained: it only adds tables, so it may be renumbered after other migrations."""
    db["library_documents"].create(
        {"id": int, "conversation_id": int, "name": str, "path": str, "media_type": str, "size": int,
         "modified": float, "content_hash": str, "status": str, "error": str, "chunks": int, "embedder": str,
         "created_at": float, "updated_at": float},
        pk="id",
        foreign_keys=[_cascade("library_documents", "conversation_id", "conversations")],
        not_null=["conversation_id", "name", "path", "media_type", "size", "status", "error", "chunks",
                  "created_at", "updated_at"],
        defaults={"media_type": "text/plain", "size": 0, "status": "indexing", "error": "", "chunks": 0},
    )
    db["library_documents"].create_index(["conversation_id", "path"], unique=True)
    db["library_chunks"].create(
        {"id": int, "document_id": int, "ordinal": int, "text": str, "page": int, "last_page": int,
         "heading": str, "tokens": int, "vector": bytes},
        pk="id",
        foreign_keys=[_cascade("library_chunks", "document_id", "library_documents")],
        not_null=["document_id", "ordinal", "text", "heading", "tokens", "vector"],
        defaults={"heading": "", "tokens": 0},
    )
    db["library_chunks"].create_index(["document_id", "ordinal"], unique=True)
    db["library_chunks"].enable_fts(["text"], create_triggers=True, tokenize="porter")
    db["message_sources"].create(
        {"id": int, "message_id": int, "position": int, "chunk_id": int, "name": str, "location": str,
         "text": str, "score": float},
        pk="id",
        foreign_keys=[_cascade("message_sources", "message_id", "messages"),
                      ForeignKey("message_sources", "chunk_id", "library_chunks", "id", on_delete="SET NULL")],
        not_null=["message_id", "position", "name", "location", "text"],
        defaults={"location": ""},
    )
    db["message_sources"].create_index(["message_id", "position"], unique=True)
    db["message_sources"].create_index(["chunk_id"])  # SET NULL on a chunk's delete finds its rows


SCHEMA_VERSION = len(MIGRATION_NAMES)
"""The version this code writes."""


def schema_version(db: Database) -> int:
    """How many of our migrations `db` has applied (0 for a new file); read-only.

    Raises SchemaTooNewError when it has applied migrations this code does not know.
    """
    applied = [m.name for m in migrations.applied(db)]
    unknown = [name for name in applied if name not in MIGRATION_NAMES]
    if unknown:
        raise SchemaTooNewError(
            f"This database was written by a newer version of Confab (it has schema changes "
            f"{', '.join(unknown)} that this version does not know). Update Confab to open it; "
            f"the file was not changed.")
    return len(applied)


def migrate(db: Database) -> tuple[int, int]:
    """Apply pending migrations; return (version before, version after)."""
    before = schema_version(db)
    migrations.apply(db)
    return before, schema_version(db)
