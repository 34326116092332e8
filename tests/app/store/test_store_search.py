import pytest


@pytest.fixture
def filled(store):
    a = store.create_conversation("Travel")
    b = store.create_conversation("Cooking")
    store.append_message(a.id, "user", "What is the best tram in Lisbon?")
    store.append_message(a.id, "assistant", "Tram 28 crosses the old town.")
    store.append_message(b.id, "user", "How long do I boil an egg?")
    return store, a, b


def test_finds_messages_with_conversation_and_snippet(filled):
    store, a, b = filled
    hits = store.search("tram")
    assert {h.conversation_id for h in hits} == {a.id}
    assert {h.role for h in hits} == {"user", "assistant"}
    assert all("[tram]" in h.snippet.lower() and h.title == "Travel" for h in hits)


def test_every_word_must_match_and_words_match_as_prefixes(filled):
    store, a, b = filled
    assert [h.conversation_id for h in store.search("boi eg")] == [b.id]
    assert store.search("tram egg") == []


def test_custom_markers(filled):
    store, a, b = filled
    assert store.search("egg", mark=("<b>", "</b>"))[0].snippet == "How long do I boil an <b>egg</b>?"


@pytest.mark.parametrize("query", ['"', "AND", "tram OR", "NEAR(", "*", "-", "a:b", "'; drop table messages; --", ""])
def test_any_text_is_a_valid_query(filled, query):
    store, a, b = filled
    store.search(query)  # never an FTS syntax error
    assert len(store.messages(a.id)) == 2


def test_index_follows_edits_deletes_and_streaming(filled):
    store, a, b = filled
    egg = store.messages(b.id)[0]
    store.edit_message(egg.id, "How long do I poach a fish?")
    assert store.search("egg") == [] and len(store.search("poach")) == 1
    reply = store.start_reply(b.id)
    reply.append("Simmer gently")
    reply.flush()
    assert [h.message_id for h in store.search("simmer")] == [reply.message_id]
    store.delete_conversation(b.id)
    assert store.search("poach") == [] and store.search("simmer") == []
