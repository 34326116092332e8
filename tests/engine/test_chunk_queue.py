"""A reply's chunks handed straight to a listener (a server's event loop) instead of a waiting thread:
in order, none lost between queueing and listening, and a listener's failure never stops the engine."""

from __future__ import annotations

import threading

from engine import SamplingParams
from engine.chunk_queue import ChunkQueue
from engine.handle import Failed

GREEDY = SamplingParams(temperature=0, max_tokens=12, ignore_stop=True)


def test_what_was_queued_goes_first_then_each_item_as_it_is_put():
    q, got = ChunkQueue(), []
    q.put(1)
    q.put(2)
    q.listen(got.append)
    q.put(3)
    assert got == [1, 2, 3] and q.empty()


def test_items_put_from_another_thread_while_listening_starts_all_arrive_in_order():
    q, got = ChunkQueue(), []
    producer = threading.Thread(target=lambda: [q.put(i) for i in range(20000)])
    producer.start()
    q.listen(got.append)
    producer.join()
    assert got == list(range(20000))


def test_a_listener_that_fails_does_not_stop_the_thread_that_puts():
    q = ChunkQueue()
    q.listen(lambda item: 1 / 0)
    q.put("chunk")  # logged, not raised into the engine thread


def test_a_reply_handed_to_a_listener_is_the_reply_read_by_iteration(tiny_engine):
    with tiny_engine.open_session() as a, tiny_engine.open_session() as b:
        iterated = [c.token_ids for c in a.generate([5, 6, 7], GREEDY)]
        handed, done = [], threading.Event()

        def take(item):
            handed.append(item)
            if isinstance(item, Failed) or item.finish_reason is not None:
                done.set()

        b.generate([5, 6, 7], GREEDY).listen(take)
        assert done.wait(60)
        assert [c.token_ids for c in handed] == iterated
