import pytest

from app.store import InvalidValueError, ReplyClosedError, ReplyStats


class Ticker:
    """A monotonic clock the test moves by hand."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _content(store, writer):
    return store.get_message(writer.message_id).content


def test_start_creates_an_empty_streaming_assistant_row(store):
    c = store.create_conversation()
    store.append_message(c.id, "user", "hi")
    writer = store.start_reply(c.id)
    row = store.get_message(writer.message_id)
    assert (row.role, row.status, row.content, row.position) == ("assistant", "streaming", "", 1)


def test_text_is_flushed_once_250_ms_have_passed(store):
    c, tick = store.create_conversation(), Ticker()
    writer = store.start_reply(c.id, monotonic=tick)
    assert writer.append("Hel") is False and writer.append("lo") is False
    assert _content(store, writer) == "" and writer.pending_chars == 5
    tick.t = 0.249
    assert writer.append(",") is False
    tick.t = 0.25
    assert writer.append(" wor") is True
    assert _content(store, writer) == "Hello, wor" and writer.flushed_chars == 10
    assert writer.append("ld") is False  # the interval starts again at each flush
    assert writer.tick() is False
    tick.t = 0.5
    assert writer.tick() is True and _content(store, writer) == "Hello, world"


def test_flush_commits_at_once(store):
    c = store.create_conversation()
    writer = store.start_reply(c.id)
    writer.append("now")
    assert writer.flush() == 3 and _content(store, writer) == "now"


def test_finish_writes_the_rest_with_status_token_ids_and_stats(store):
    c = store.create_conversation()
    writer = store.start_reply(c.id)
    writer.append("Hi ")
    writer.flush()
    writer.append("there")
    stats = ReplyStats(ttft_s=0.05, tok_s=80.0, prompt_tokens=9, completion_tokens=3)
    final = writer.finish("complete", token_ids=[5, 6, 7], stats=stats)
    assert (final.content, final.status, final.token_ids, final.stats) == ("Hi there", "complete", (5, 6, 7), stats)
    assert store.get_conversation(c.id).updated_at == final.updated_at
    assert writer.finished


@pytest.mark.parametrize("end, status, error", [
    (lambda w: w.cancel(token_ids=[1]), "cancelled", None),
    (lambda w: w.fail("CUDA out of memory"), "error", "CUDA out of memory"),
    (lambda w: w.finish("interrupted"), "interrupted", None),
])
def test_other_endings_keep_the_text(store, end, status, error):
    c = store.create_conversation()
    writer = store.start_reply(c.id)
    writer.append("partial")
    final = end(writer)
    assert (final.content, final.status, final.error) == ("partial", status, error)


@pytest.mark.parametrize("action, error, message", [
    (lambda w: w.finish("streaming"), InvalidValueError,
     "status must be one of complete, interrupted, cancelled, error, not 'streaming'"),
    (lambda w: (w.finish(), w.append("more")), ReplyClosedError, "Reply 1 was already finished."),
    (lambda w: (w.finish(), w.finish()), ReplyClosedError, "Reply 1 was already finished."),
])
def test_misuse(store, action, error, message):
    c = store.create_conversation()
    writer = store.start_reply(c.id)
    with pytest.raises(error) as e:
        action(writer)
    assert str(e.value) == message


def test_deleting_the_conversation_mid_reply_stops_the_writer(store):
    c = store.create_conversation()
    writer = store.start_reply(c.id)
    writer.append("text")
    store.delete_conversation(c.id)
    with pytest.raises(ReplyClosedError, match="no longer streaming: its conversation was deleted"):
        writer.flush()


def test_each_flush_is_one_short_transaction(store):
    c = store.create_conversation()
    writer = store.start_reply(c.id, flush_interval=0)
    statements = []
    store.db.conn.set_trace_callback(statements.append)
    writer.append("x")
    store.db.conn.set_trace_callback(None)
    assert (statements[0], statements[-1]) == ("BEGIN IMMEDIATE", "COMMIT")  # the write lock first
    body = {s.split()[0].lower() for s in statements[1:-1] if not s.startswith("--")}  # "--": inside triggers
    assert body == {"update"} and not store.db.conn.in_transaction
