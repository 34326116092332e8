"""A conversation deleted while its session is live (delete, then quit) leaves nothing behind and
says nothing: its state is not saved at quit, and no "could not save" warning is logged."""

from __future__ import annotations

import logging

from app.conversations import ConversationManager
from tests.app.engine_fixtures import GREEDY, make_engine, reply_ids  # noqa: F401 (fixture)


def test_a_deleted_conversations_live_session_is_dropped_quietly_at_quit(
        make_engine, tiny_models, store, tmp_path, caplog):
    engine = make_engine(tiny_models["llama"], "torch")
    manager = ConversationManager(engine, store)
    gone, kept = store.create_conversation("gone"), store.create_conversation("kept")
    reply_ids(manager.reply(gone.id, "Hello there", GREEDY))
    reply_ids(manager.reply(kept.id, "Hello there", GREEDY))
    store.delete_conversation(gone.id)  # the app deletes through the store; the session stays live
    with caplog.at_level(logging.WARNING):
        manager.close()  # what quitting does
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert store.states.get(kept.id, engine.model_fingerprint, engine.template_fingerprint) is not None
    files = [p.name for p in (tmp_path / "states").rglob("*") if p.is_file()]
    assert len(files) == 1, f"only the kept conversation's state is on disk: {files}"
