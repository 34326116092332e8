"""Any text a user can type searches without an error: control characters (NUL included), lone
surrogates, marks and emoji. A NUL separates words, like a space."""

import pytest

ODD = [chr(i) for i in range(0x20)] + ["\x7f", "\u200b", "\u2028", "\ufeff", "\ufffd", "\U0001f600", "\ud800",
                                       "\x00\x00", '"\x00"', "\x00*", "tram\x00", "\x00tram"]


@pytest.fixture
def filled(store):
    c = store.create_conversation("Travel")
    m = store.append_message(c.id, "user", "What is the best tram in Lisbon?")
    return store, m


@pytest.mark.parametrize("query", ODD, ids=[ascii(q) for q in ODD])
def test_odd_text_searches_without_error(filled, query):
    store, m = filled
    hits = store.search(query)
    assert [h.message_id for h in hits] in ([], [m.id])


@pytest.mark.parametrize("query", ["tram\x00lisbon", "\x00tram\x00", "lis\x00tram"])
def test_a_nul_separates_words(filled, query):
    store, m = filled
    assert [h.message_id for h in store.search(query)] == [m.id]
