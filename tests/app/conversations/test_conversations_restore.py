"""Suspending a conversation to disk and resuming it changes nothing the model says; a state file
that cannot be used costs only a re-prefill."""

from __future__ import annotations

import logging

import pytest

from app.conversations import ConversationManager
from engine import SamplingParams
from tests.app.engine_fixtures import GREEDY, make_engine, reply_ids  # noqa: F401 (fixture)

TURNS = ["Hello there", "Tell me more", "And then?"]


def test_suspended_and_restored_conversation_continues_with_the_same_greedy_tokens(
        make_engine, tiny_models, backend, store):
    engine = make_engine(tiny_models["llama"], backend)
    manager = ConversationManager(engine, store)
    kept, moved = store.create_conversation("kept"), store.create_conversation("moved")
    for i, text in enumerate(TURNS):
        kept_ids, _ = reply_ids(manager.reply(kept.id, text, GREEDY))
        if i:  # before every later turn, "moved" went to disk and its session was closed
            assert manager.suspend(moved.id)
            assert store.states.get(moved.id, engine.model_fingerprint, engine.template_fingerprint)
        moved_ids, last = reply_ids(manager.reply(moved.id, text, GREEDY))
        assert moved_ids == kept_ids
        if i:  # warm resume: only the new turn was prefilled, not the whole history
            assert last.stats.prefilled_tokens < last.stats.prompt_tokens // 2
    assert manager.restores == 2
    assert [m.token_ids for m in store.messages(moved.id)] == [m.token_ids for m in store.messages(kept.id)]


def test_restore_after_a_restart_of_the_engine(make_engine, tiny_models, backend, store):
    first = make_engine(tiny_models["llama"], backend)
    manager = ConversationManager(first, store)
    c, ref = store.create_conversation("c"), store.create_conversation("reference")
    for text in TURNS[:2]:
        reply_ids(manager.reply(c.id, text, GREEDY))
        reply_ids(manager.reply(ref.id, text, GREEDY))
    expected, _ = reply_ids(manager.reply(ref.id, TURNS[2], GREEDY))
    manager.close()
    first.close()

    manager = ConversationManager(make_engine(tiny_models["llama"], backend), store)
    got, last = reply_ids(manager.reply(c.id, TURNS[2], GREEDY))
    assert got == expected
    assert manager.restores == 1
    assert last.stats.prefilled_tokens < last.stats.prompt_tokens // 2


def _garbage(path, other):
    path.write_bytes(b"\x00not a safetensors file\xff" * 50)


def _missing(path, other):
    path.unlink()


def _other_model(path, other):
    """Replace the file by a valid state saved from a model with other weights."""
    with other.open_session() as s:
        list(s.chat([{"role": "user", "content": "hi"}], GREEDY))
        s.save_state(path)


@pytest.mark.parametrize("damage", [_garbage, _missing, _other_model])
def test_unusable_state_file_falls_back_to_re_prefill(
        make_engine, tiny_models, tiny_llama_other_seed, store, caplog, damage):
    engine = make_engine(tiny_models["llama"], "torch")
    manager = ConversationManager(engine, store)
    c = store.create_conversation("c", system_prompt="Be brief.")
    for text in TURNS[:2]:
        reply_ids(manager.reply(c.id, text, GREEDY))
    manager.suspend(c.id)
    state = store.states.get(c.id, engine.model_fingerprint, engine.template_fingerprint)
    other = make_engine(tiny_llama_other_seed, "torch") if damage is _other_model else None
    damage(state.path, other)
    history = store.messages(c.id)

    # What a re-prefill from the text must give: the same messages in a fresh session.
    with engine.open_session() as fresh:
        from app.conversations import chat_messages
        store.append_message(c.id, "user", TURNS[2])
        expected, _ = reply_ids(fresh.chat(chat_messages(store, c.id), GREEDY))
        store.truncate_after(history[-1].id)

    with caplog.at_level(logging.WARNING, logger="app.conversations"):
        got, last = reply_ids(manager.reply(c.id, TURNS[2], GREEDY))
    assert got == expected
    assert last.stats.prefilled_tokens == last.stats.prompt_tokens  # re-prefilled in full
    assert manager.restores == 0
    assert "unusable" in caplog.text and f"conversation {c.id}" in caplog.text
    assert store.messages(c.id)[: len(history)] == history  # nothing lost
    assert [m.status for m in store.messages(c.id)][-2:] == ["complete", "complete"]
    # The bad record went; the conversation has a fresh, usable one once suspended again.
    assert store.states.get(c.id, engine.model_fingerprint, engine.template_fingerprint) is None
    manager.suspend(c.id)
    assert manager.session_for(c.id) and manager.restores == 1


def test_record_under_another_fingerprint_is_never_tried(make_engine, tiny_models, store):
    engine = make_engine(tiny_models["llama"], "torch")
    manager = ConversationManager(engine, store)
    c = store.create_conversation("c")
    reply_ids(manager.reply(c.id, "hi", GREEDY))
    manager.suspend(c.id)
    state = store.states.get(c.id, engine.model_fingerprint, engine.template_fingerprint)
    store.db["saved_states"].update(state.id, {"model_fingerprint": "another-model"})
    reply_ids(manager.reply(c.id, "more", SamplingParams(temperature=0, max_tokens=2)))
    assert manager.restores == 0
