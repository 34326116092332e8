"""A saved state larger than the whole state budget is not kept, and saving it evicts nothing:
the other conversations' states stay, and the big conversation re-prefills from its text."""

from __future__ import annotations

import logging

from app.conversations import ConversationManager
from tests.app.engine_fixtures import GREEDY, make_engine, reply_ids  # noqa: F401 (fixture)


def test_a_state_larger_than_the_budget_evicts_nothing(make_engine, tiny_models, store, caplog):
    engine = make_engine(tiny_models["llama"], "torch", max_sessions=1)
    manager = ConversationManager(engine, store, state_budget_bytes=1 << 40)
    small = [store.create_conversation(f"small {n}") for n in range(2)]
    for c in small:  # max_sessions=1: the second reply suspends the first conversation
        reply_ids(manager.reply(c.id, "hi", GREEDY))
    manager.suspend(small[1].id)
    kept = store.states.by_last_used()
    assert [s.conversation_id for s in kept] == [c.id for c in small]
    manager.states.budget_bytes = store.states.total_bytes()  # both small states fit, exactly

    big = store.create_conversation("big")
    reply_ids(manager.reply(big.id, "a much longer first turn, " * 40, GREEDY))
    with caplog.at_level(logging.INFO, logger="app.conversations"):
        assert manager.suspend(big.id)
    assert store.states.by_last_used() == kept  # nothing evicted, not even touched
    assert all(s.path.exists() for s in kept)
    assert sorted(p.name for p in store.states.directory.iterdir()) == sorted(s.path.name for s in kept)
    assert f"state of conversation {big.id} is larger than the whole state budget" in caplog.text

    ids, last = reply_ids(manager.reply(big.id, "and then?", GREEDY))  # re-prefilled from the text
    assert len(ids) == GREEDY.max_tokens and last.stats.prefilled_tokens == last.stats.prompt_tokens
