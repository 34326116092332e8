"""A full engine suspends the least recently used idle session; every conversation keeps its own
context through suspension and resume; a full engine of busy sessions refuses clearly; saved
states stay under their size budget."""

from __future__ import annotations

import pytest

from app.conversations import AllSessionsBusyError, ConversationManager
from engine import SamplingParams
from engine.errors import CapacityError
from tests.app.engine_fixtures import GREEDY, make_engine, reply_ids  # noqa: F401 (fixture)


def _turns(n: int) -> list[str]:
    return [f"Conversation {n}: first words", f"Conversation {n}: a second turn", f"Conversation {n}: last"]


def test_five_conversations_round_robin_on_two_sessions_keep_their_own_context(
        make_engine, tiny_models, backend, store):
    engine = make_engine(tiny_models["llama"], backend, max_sessions=2)
    manager = ConversationManager(engine, store)
    conversations = [store.create_conversation(f"c{n}") for n in range(5)]
    got: dict[int, list[list[int]]] = {c.id: [] for c in conversations}
    for turn in range(3):
        for n, c in enumerate(conversations):
            ids, _ = reply_ids(manager.reply(c.id, _turns(n)[turn], GREEDY))
            got[c.id].append(ids)
            assert engine.capacity().live_sessions <= 2
    assert manager.suspends >= 13 and manager.restores >= 10
    assert len(store.states.by_last_used()) >= 3
    manager.close()

    # Reference: each conversation alone, in a fresh engine, never suspended.
    reference = make_engine(tiny_models["llama"], backend)
    for n, c in enumerate(conversations):
        messages, expected = [], []
        with reference.open_session() as s:
            for text in _turns(n):
                messages.append({"role": "user", "content": text})
                ids, _ = reply_ids(s.chat(messages, GREEDY))
                expected.append(ids)
                messages.append({"role": "assistant", "content": reference.tokenizer.decode(ids, skip_special_tokens=True)})
        assert got[c.id] == expected, f"conversation {n} lost its context"


def test_least_recently_used_idle_session_is_the_one_suspended(make_engine, tiny_models, store):
    engine = make_engine(tiny_models["llama"], "torch", max_sessions=2)
    manager = ConversationManager(engine, store)
    a, b, c = (store.create_conversation(t) for t in "abc")
    for x in (a, b):
        reply_ids(manager.reply(x.id, "hi", GREEDY))
    manager.session_for(a.id)  # a is now the most recently used
    reply_ids(manager.reply(c.id, "hi", GREEDY))
    assert manager.live_conversations() == [a.id, c.id]
    assert store.states.get(b.id, engine.model_fingerprint, engine.template_fingerprint) is not None


def test_all_sessions_busy_is_a_clear_error(make_engine, tiny_models, store):
    engine = make_engine(tiny_models["llama"], "torch", max_sessions=2)
    manager = ConversationManager(engine, store)
    a, b, c = (store.create_conversation(t) for t in "abc")
    long = SamplingParams(temperature=0, max_tokens=200, ignore_stop=True)
    streams = [manager.reply(a.id, "hi", long), manager.reply(b.id, "hi", long)]
    for stream in streams:
        next(stream)  # both are generating now
    with pytest.raises(AllSessionsBusyError, match=r"2 of 2 sessions are open and 2 of them are generating") as e:
        manager.session_for(c.id)
    assert isinstance(e.value, CapacityError)
    assert engine.capacity().live_sessions == 2  # never a silent overcommit
    assert store.messages(c.id) == []
    # Once one reply is done (here: stopped by its reader), its session can make room.
    streams[0].close()
    assert store.messages(a.id)[-1].status == "cancelled"
    ids, _ = reply_ids(manager.reply(c.id, "hi", GREEDY))
    assert len(ids) == GREEDY.max_tokens
    assert manager.live_conversations() == [b.id, c.id]
    streams[1].close()


def test_saved_states_stay_under_their_budget_least_recently_used_first(make_engine, tiny_models, store):
    engine = make_engine(tiny_models["llama"], "torch", max_sessions=1)
    probe = ConversationManager(engine, store)
    first = store.create_conversation("probe")
    reply_ids(probe.reply(first.id, "hi", GREEDY))
    probe.suspend(first.id)
    one = store.states.total_bytes()
    store.delete_conversation(first.id)

    manager = ConversationManager(engine, store, state_budget_bytes=int(one * 2.5))
    conversations = [store.create_conversation(f"c{n}") for n in range(5)]
    for c in conversations:  # max_sessions=1: each reply suspends the one before
        reply_ids(manager.reply(c.id, "hi", GREEDY))
        assert store.states.total_bytes() <= manager.states.budget_bytes
    manager.close()
    assert store.states.total_bytes() <= manager.states.budget_bytes
    kept = [s.conversation_id for s in store.states.by_last_used()]
    assert kept == [conversations[3].id, conversations[4].id]  # the two most recently used
    assert all(s.path.exists() for s in store.states.by_last_used())
    assert len(list(store.states.directory.iterdir())) == 2  # evicted files are gone too


def test_a_zero_budget_keeps_no_files_and_still_works(make_engine, tiny_models, store):
    engine = make_engine(tiny_models["llama"], "torch", max_sessions=1)
    manager = ConversationManager(engine, store, state_budget_bytes=0)
    a, b = store.create_conversation("a"), store.create_conversation("b")
    first, _ = reply_ids(manager.reply(a.id, "hi", GREEDY))
    reply_ids(manager.reply(b.id, "hi", GREEDY))
    again, last = reply_ids(manager.reply(a.id, "more", GREEDY))
    assert store.states.total_bytes() == 0 and manager.restores == 0
    assert last.stats.prefilled_tokens == last.stats.prompt_tokens
