"""Freeze a database of each schema version, for test_store_schema.py.

    python tests/app/store/make_old_databases.py

Writes tests/app/store/data/confab-v<N>.db for every version N (1 to SCHEMA_VERSION) that has no file
yet, holding a few sample rows. It never rewrites an existing file: those stand for what an older
Confab left on users' disks. Run it, and commit the new file, whenever a migration is added.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from sqlite_utils import Database  # noqa: E402

from app.store.schema import MIGRATION_NAMES, SCHEMA_VERSION, migrations  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def fixture_path(version: int) -> Path:
    return DATA / f"confab-v{version}.db"


def build(version: int, path: Path) -> None:
    """A database at `version` with sample rows written as that version's schema allows."""
    db = Database(path)
    db.enable_wal()
    stop = MIGRATION_NAMES[version] if version < SCHEMA_VERSION else None
    migrations.apply(db, stop_before=stop)
    t = 1_700_000_000.25
    with db.atomic():
        db["conversations"].insert_all([
            {"id": 1, "title": "Lisbon trip", "created_at": t, "updated_at": t + 60, "pinned": 0,
             "model": "bundled:smollm2-135m-instruct", "system_prompt": "Be brief.",
             "sampling": json.dumps({"temperature": 0.2})},
            {"id": 2, "title": "Half a reply", "created_at": t + 100, "updated_at": t + 130, "pinned": 1,
             "model": None, "system_prompt": "", "sampling": "{}"},
        ])
        db["messages"].insert_all(_with_versions(version, [
            {"id": 1, "conversation_id": 1, "position": 0, "role": "user", "content": "Where should we eat in Lisbon?",
             "status": "complete", "created_at": t, "updated_at": t},
            {"id": 2, "conversation_id": 1, "position": 1, "role": "assistant",
             "content": "Try pastéis de nata in Belém — and the tram ride there.", "status": "complete",
             "token_ids": "[17, 4242, 9, 31337]", "ttft_s": 0.125, "tok_s": 41.5, "prompt_tokens": 12,
             "completion_tokens": 4, "created_at": t + 1, "updated_at": t + 60},
            {"id": 3, "conversation_id": 2, "position": 0, "role": "user", "content": "Count slowly to ten.",
             "status": "complete", "created_at": t + 100, "updated_at": t + 100},
            {"id": 4, "conversation_id": 2, "position": 1, "role": "assistant", "content": "One, two, thr",
             "status": "streaming", "created_at": t + 101, "updated_at": t + 130},
        ]))
        db["saved_states"].insert({
            "id": 1, "conversation_id": 1, "model_fingerprint": "m-abc", "template_fingerprint": "t-def",
            "token_count": 16, "prefix_hash": "p-123", "path": "c1-0123456789ab.state", "bytes": 4096,
            "created_at": t + 60, "last_used_at": t + 60})
        if "0005_attachments" in MIGRATION_NAMES[:version]:
            db["attachments"].insert({
                "id": 1, "message_id": 1, "position": 0, "name": "itinerary.md", "media_type": "text/markdown",
                "size": 52, "text": "# Day one\nBelém tower, then lunch near Alfama.\n", "truncated": 0,
                "data": None, "created_at": t, **({"tokens": 14, "tokens_exact": 1}
                                                  if "0008_attachment_tokens" in MIGRATION_NAMES[:version] else {})})
        if "0010_attachment_images" in MIGRATION_NAMES[:version]:
            db["attachments"].insert({
                "id": 2, "message_id": 1, "position": 1, "name": "tram.png", "media_type": "image/png",
                "size": len(_TINY_PNG), "text": "", "truncated": 0, "data": _TINY_PNG, "created_at": t,
                "tokens": 80, "tokens_exact": 1, "width": 1, "height": 1, "source_width": None,
                "source_height": None, "thumbnail": _TINY_PNG})
        if "0006_tool_calls" in MIGRATION_NAMES[:version]:
            db["tool_calls"].insert({
                "id": 1, "message_id": 2, "position": 0, "step": 1, "offset": 0, "call_id": "a1b2c3d4e",
                "server": "maps", "tool": "find_bakery", "arguments": '{"city": "Lisbon"}', "status": "done",
                "result": "Pastéis de Belém, Rua de Belém 84", "created_at": t + 1, "updated_at": t + 2})
            db["conversation_servers"].insert({"conversation_id": 1, "server": "maps"})
        if "0011_library" in MIGRATION_NAMES[:version]:
            vector = struct.pack("<4f", 0.5, -0.5, 0.5, -0.5)  # a unit vector, as the embedder writes them
            db["library_documents"].insert({
                "id": 1, "conversation_id": 1, "name": "guide.md", "path": "/home/ana/trips/guide.md",
                "media_type": "text/markdown", "size": 120, "modified": t, "content_hash": "ab" * 32,
                "status": "ready", "error": "", "chunks": 1, "embedder": "bundled:all-minilm-l6-v2",
                "created_at": t, "updated_at": t})
            db["library_chunks"].insert({
                "id": 1, "document_id": 1, "ordinal": 0, "text": "Lisbon › Food\n\nNata tarts are best warm.",
                "page": None, "last_page": None, "heading": "Lisbon › Food", "tokens": 12, "vector": vector})
            db["message_sources"].insert({
                "id": 1, "message_id": 2, "position": 0, "chunk_id": 1, "name": "guide.md", "location": "§Food",
                "text": "Lisbon › Food\n\nNata tarts are best warm.", "score": 0.032})
        if "0007_reply_notice" in MIGRATION_NAMES[:version]:
            db["messages"].update(2, {"notice": "The conversation was longer than the model's context of 2,048 "
                                                "tokens: 4 earlier messages from the start left out."})
    db.vacuum()
    db.close()


_TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c49444154789c63f8df"
    "c0000004010180c52a185d0000000049454e44ae426082")
"""A 1×1 PNG (one orange pixel)."""


def _with_versions(version: int, rows: list[dict]) -> list[dict]:
    """From 0003_message_versions on, each message follows the one before it and replies name
    their model; from 0004_reasoning on, the finished reply keeps its reasoning apart."""
    if version < 3:
        return rows
    if "0004_reasoning" in MIGRATION_NAMES[:version]:
        for row in rows:
            row.update(reasoning="")
        rows[1].update(reasoning="They asked about food in Lisbon; Belém's pastries are famous.",
                       reasoning_s=3.5)
    previous: dict[int, int] = {}
    for i, row in enumerate(rows):
        row.update(parent_id=previous.get(row["conversation_id"]), chosen=i + 1)
        previous[row["conversation_id"]] = row["id"]
        if row["role"] == "assistant":
            row.update(model="SmolLM2-135M-Instruct",
                       finish_reason="stop" if row["status"] == "complete" else None)
    return rows


def main() -> int:
    DATA.mkdir(exist_ok=True)
    for version in range(1, SCHEMA_VERSION + 1):
        path = fixture_path(version)
        if path.exists():
            print(f"kept    {path.relative_to(ROOT)}")
        else:
            build(version, path)
            print(f"written {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
