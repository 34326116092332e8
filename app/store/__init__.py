"""Confab's store: conversations, messages and saved-state records in one SQLite database.

    from app.store import open_store

    opened = open_store()                 # $CONFAB_HOME or the user data folder
    if opened.problem:                    # damage was moved aside or repaired: tell the user
        show(opened.problem.message)
    store = opened.store                  # owned by this thread from now on
    c = store.create_conversation("Plans")
    store.append_message(c.id, "user", "Hi")
    reply = store.start_reply(c.id)
    reply.append("Hello")
    reply.finish("complete", token_ids=[15496])

Built on sqlite-utils (`Database`, `atomic()`, `Migrations`); needs no engine.
"""

from .attachments import Attachment
from .db import BUSY_TIMEOUT_MS, OpenResult, StoreProblem, open_memory_store, open_store
from .errors import (ImportFormatError, InvalidValueError, NotFoundError, ReplyClosedError,
                     SchemaTooNewError, StoreError, StoreReadOnlyError)
from .library import DOCUMENT_STATUSES, ChunkRow, Library, LibraryDocument, Passage, Source
from .export import export_json, export_markdown, import_json
from .paths import DB_NAME, HOME_ENV, data_dir, database_path, prefix_cache_dir, states_dir
from .records import (CONTEXT_FULL, FINAL_STATUSES, ROLES, STATUSES, Conversation, Message, ReplyStats, SavedState,
                      SearchHit)
from .schema import SCHEMA_VERSION, schema_version
from .states import SavedStates
from .store import LEAF, Store
from .streaming import FLUSH_INTERVAL_S, ReplyWriter
from .tool_calls import TOOL_STATUSES, ToolCallRecord

__all__ = [
    "BUSY_TIMEOUT_MS",
    "CONTEXT_FULL",
    "Attachment",
    "ChunkRow",
    "DOCUMENT_STATUSES",
    "Library",
    "LibraryDocument",
    "Passage",
    "Source",
    "DB_NAME",
    "FINAL_STATUSES",
    "FLUSH_INTERVAL_S",
    "HOME_ENV",
    "LEAF",
    "ROLES",
    "SCHEMA_VERSION",
    "STATUSES",
    "Conversation",
    "ImportFormatError",
    "InvalidValueError",
    "Message",
    "NotFoundError",
    "OpenResult",
    "ReplyClosedError",
    "ReplyStats",
    "ReplyWriter",
    "SavedState",
    "SavedStates",
    "SchemaTooNewError",
    "SearchHit",
    "Store",
    "StoreError",
    "StoreProblem",
    "StoreReadOnlyError",
    "TOOL_STATUSES",
    "ToolCallRecord",
    "data_dir",
    "database_path",
    "prefix_cache_dir",
    "export_json",
    "export_markdown",
    "import_json",
    "open_memory_store",
    "open_store",
    "schema_version",
    "states_dir",
]
