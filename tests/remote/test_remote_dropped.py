"""A remote server that stops mid-reply (issue 38, defect 6b): the user reads that the server
stopped in the middle of the reply, not "could not connect … incomplete chunked read" (it was
connected), and the text that arrived is kept."""

from __future__ import annotations

import pytest

from app.conversations import ConversationManager
from app.error_words import in_words
from app.store import open_memory_store
from engine import SamplingParams
from engine.remote import ConnectionLostError, RemoteEngine
from tests.remote.stubs import dropping_server


@pytest.fixture
def store(tmp_path):
    s = open_memory_store(tmp_path / "states")
    yield s
    s.close()


def test_a_reply_cut_by_the_server_says_it_stopped_mid_reply_and_keeps_the_text(store):
    with dropping_server() as url:
        engine = RemoteEngine.connect(url)
        manager = ConversationManager(engine, store)
        cid = store.create_conversation("cut").id
        try:
            with pytest.raises(ConnectionLostError) as caught:
                list(manager.reply(cid, "Tell me a story.", SamplingParams(temperature=0)))
        finally:
            manager.close()
            engine.close()
    assert "could not connect" not in str(caught.value)
    assert "stopped mid-reply" in str(caught.value)
    reply = store.messages(cid)[-1]
    assert reply.status == "interrupted" and reply.content == "Once upon"
    words = in_words(reply.error)  # as the chat view shows the stored reply
    assert words.sentence.startswith("The server stopped in the middle of this reply")
    assert "What arrived is kept" in words.sentence and "could not connect" not in words.sentence.lower()


@pytest.mark.parametrize("stored", [
    "connection lost mid-reply: could not connect to 127.0.0.1:8799: peer closed connection without "
    "sending complete message body (incomplete chunked read)",  # as older versions stored it
    "ConnectionLostError: the server at 127.0.0.1:8799 stopped mid-reply: the connection closed",
])
def test_stored_replies_of_any_version_read_in_words(stored):
    assert in_words(stored).sentence.startswith("The server stopped in the middle of this reply")
