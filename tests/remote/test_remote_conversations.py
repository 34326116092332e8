"""The conversations layer over a remote engine, with no "if remote" in it: history resent each
turn, a restart of the app continues the stored conversations remotely, and a server killed
mid-reply leaves the reply `interrupted` with its text and a clear message."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager
from app.store import open_store
from engine import RemoteEngine, SamplingParams
from engine.remote import ConnectionLostError

GREEDY = SamplingParams(temperature=0, max_tokens=16)


def _reply(manager: ConversationManager, cid: int, text: str) -> str:
    return "".join(chunk.text for chunk in manager.reply(cid, text, GREEDY))


def test_restart_restores_the_conversations_and_continues_them_remotely(bundled_server, tmp_path):
    opened = open_store(tmp_path)
    engine = RemoteEngine.connect(bundled_server.url)
    manager = ConversationManager(engine, opened.store)
    cid = opened.store.create_conversation("remote").id
    first = _reply(manager, cid, "What is the capital of France?")
    manager.close()
    engine.close()
    opened.store.close()

    opened = open_store(tmp_path)  # the app starts again
    engine = RemoteEngine.connect(bundled_server.url)
    manager = ConversationManager(engine, opened.store)
    try:
        second = _reply(manager, cid, "And of Italy?")
        messages = opened.store.messages(cid)
        assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
        assert messages[1].content == first and messages[3].content == second and second.strip()
        assert all(m.status == "complete" for m in messages)
        assert messages[3].model == engine.label  # each reply records which engine and model wrote it
        assert opened.store.states.total_bytes() == 0  # nothing saved: the history is resent
    finally:
        manager.close()
        engine.close()
        opened.store.close()


def test_server_killed_mid_reply_is_interrupted_and_the_next_message_works_after_it_returns(spawn, tmp_path):
    server = spawn()
    opened = open_store(tmp_path)
    store = opened.store
    engine = RemoteEngine.connect(server.url)
    manager = ConversationManager(engine, store)
    cid = store.create_conversation("cut").id
    try:
        chunks = manager.reply(cid, "Tell me a long story.", SamplingParams(temperature=0, max_tokens=1000,
                                                                            ignore_stop=True))
        arrived = next(chunks).text
        server.kill()
        with pytest.raises(ConnectionLostError) as caught:
            for chunk in chunks:
                arrived += chunk.text
        assert server.port and ("connection" in str(caught.value).lower())
        reply = store.messages(cid)[-1]
        assert reply.status == "interrupted" and reply.content == arrived and arrived
        assert reply.error == str(caught.value)

        spawn(port=server.port)  # the server comes back on the same address
        assert _reply(manager, cid, "Go on.").strip()
        assert store.messages(cid)[-1].status == "complete"
    finally:
        manager.close()
        engine.close()
        store.close()
