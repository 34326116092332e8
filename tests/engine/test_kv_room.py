"""A shared K/V pool (llama.cpp) under more traffic than it holds: turns are admitted by what they
hold, not their worst case; idle sessions park to disk and come back on their next turn; younger
turns pause or are preempted while older ones grow; every admitted turn finishes with the tokens it
would have had alone; what cannot fit is refused before any compute, with the numbers."""

from __future__ import annotations

import threading

import pytest

from engine import SamplingParams
from engine.errors import CapacityError
from tests.engine.helpers import token_ids
from tests.conftest import HEAD_DIM

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

PER_TOKEN = 2 * 2 * (HEAD_DIM + HEAD_DIM) * 2  # layers × kv heads × (K + V head dims) × float16 bytes


def greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=n, ignore_stop=True)


@pytest.fixture
def small_pool(make_engine, tiny_models):
    """A pool of 256 tokens (300 tokens' budget, sized in steps of 256), each context up to 128."""
    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=128, memory_budget=300 * PER_TOKEN)
    assert engine.capacity().pool_tokens == 256
    return engine


@pytest.fixture
def roomy(make_engine, tiny_models):
    """The same model where nothing ever has to move: the reference tokens."""
    return make_engine(tiny_models["llama"], "llamacpp", max_context=128)


def solo(engine, prompt: list[int], n: int) -> list[int]:
    with engine.open_session() as s:
        return token_ids(s.generate(prompt, greedy(n)))


def test_turns_without_a_token_limit_are_admitted_by_what_they_hold(small_pool):
    """Eight turns that may each reach the whole context (no token limit: 128 - 4 new tokens) all run
    at once in a pool of two contexts, and each finishes: none is refused or fails.

    (Their tokens are not compared with solo runs: a turn that grows into cells another freed is
    attended in another cell order, which moves float sums by rounding.)"""
    sessions = [small_pool.open_session() for _ in range(8)]
    streams = [s.generate([5 + i, 6, 7, 8], greedy(1000)) for i, s in enumerate(sessions)]  # the context ends them
    got: dict[int, list] = {}
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(i, list(streams[i]))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [sum(len(c.token_ids) for c in got[i]) for i in range(8)] == [124] * 8
    assert [got[i][-1].finish_reason for i in range(8)] == ["length"] * 8
    room = small_pool._worker.room
    assert room.preempts > 0 and room.restores > 0  # 8 × 128 tokens in a pool of 256: turns had to move
    for s in sessions:
        s.close()
    assert small_pool.capacity().held_tokens == 0


def test_an_idle_session_parks_for_a_new_turn_and_continues_as_if_it_never_left(small_pool, roomy):
    a, b, c = small_pool.open_session(), small_pool.open_session(), small_pool.open_session()
    first_a = token_ids(a.generate(list(range(10, 30)), greedy(100)))  # holds 119 tokens
    token_ids(b.generate(list(range(40, 60)), greedy(100)))
    assert small_pool.capacity().held_tokens == 2 * 119
    # c's turn does not fit beside a and b: the least recently used idle session (a) parks for it
    assert len(token_ids(c.generate(list(range(70, 90)), greedy(100)))) == 100
    assert small_pool._worker.room.parks >= 1
    # a's next turn brings its state back (b or c parks now) and reads only what is new
    more = a.tokens + [31, 32, 33]
    stream = a.generate(more, greedy(5))
    chunks = list(stream)
    assert chunks[-1].stats.prefilled_tokens == 4  # the reply's last token and the 3 new ones
    with roomy.open_session() as ref:
        assert token_ids(ref.generate(list(range(10, 30)), greedy(100))) == first_a
        assert token_ids(ref.generate(more, greedy(5))) == [t for c in chunks for t in c.token_ids]
    for s in (a, b, c):
        s.close()
    assert small_pool.capacity().held_tokens == 0


def test_a_park_does_not_wait_for_its_file_and_the_session_comes_back_whole(small_pool, roomy, monkeypatch):
    """Parking wrote its file on the engine thread: a 1.7B model's idle 1,571-token session took 0.94 s
    to park, and the reply that made it park stalled. Here the file cannot be written until c's whole
    turn (which parks a) has ended; a then comes back from that file as if it had never left."""
    backend = small_pool._worker.backend
    released, started = threading.Event(), threading.Event()
    real = backend.state_writer

    def held_writer(seq, metadata):
        write = real(seq, metadata)

        def later(path):
            started.set()
            assert released.wait(60), "the test never let the write go"
            write(path)
        return later

    monkeypatch.setattr(backend, "state_writer", held_writer)
    a, b, c = small_pool.open_session(), small_pool.open_session(), small_pool.open_session()
    first_a = token_ids(a.generate(list(range(10, 30)), greedy(100)))
    token_ids(b.generate(list(range(40, 60)), greedy(100)))
    assert len(token_ids(c.generate(list(range(70, 90)), greedy(100)))) == 100  # a parked, its file unwritten
    assert started.is_set() and small_pool._worker.slots[a.id].parked is not None
    released.set()
    more = a.tokens + [31, 32, 33]
    got = token_ids(a.generate(more, greedy(5)))
    with roomy.open_session() as ref:
        assert token_ids(ref.generate(list(range(10, 30)), greedy(100))) == first_a
        assert token_ids(ref.generate(more, greedy(5))) == got
    for s in (a, b, c):
        s.close()


def test_idle_sessions_stay_resident_beside_a_turn_too_short_for_a_park_to_pay(make_engine, tiny_models):
    """A park reads every cell out (and a restore back in): beside a reply of a few tokens that costs
    more than walking past the cells. A 1.7B model's 64-token reply after a 1,500-token prompt
    decoded at 12.6 tok/s while the prompt's idle session parked, against 20 undisturbed."""
    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=512)
    sessions = [engine.open_session() for _ in range(3)]
    for i, s in enumerate(sessions):
        token_ids(s.generate(list(range(10 + 7 * i, 210 + 7 * i)), greedy(100)))  # 300 cells each, idle
    from engine import kv_room

    room, slots = engine._worker.room, [engine._worker.slots[s.id] for s in sessions]
    resident = [slot.parked is None for slot in slots]
    assert sum(len(slot.fed) for slot in slots if slot.parked is None) > kv_room.IDLE_FLOOR  # over their share
    parks = room.parks
    assert 4 + 3 < engine._worker.backend.park_break_even
    with engine.open_session() as short:
        assert len(token_ids(short.generate([300, 301, 302, 303], greedy(3)))) == 3
    assert room.parks == parks and [slot.parked is None for slot in slots] == resident
    for s in sessions:
        s.close()


def test_a_parked_session_saves_and_restores(small_pool, roomy, tmp_path):
    a, b = small_pool.open_session(), small_pool.open_session()
    token_ids(a.generate(list(range(10, 30)), greedy(100)))
    token_ids(b.generate(list(range(40, 60)), greedy(100)))
    with small_pool.open_session() as c:
        token_ids(c.generate(list(range(70, 90)), greedy(100)))  # parks a
    assert small_pool._worker.slots[a.id].parked is not None
    a.save_state(tmp_path / "a.state")
    a.close()
    with small_pool.open_session(restore_from=tmp_path / "a.state") as back, roomy.open_session() as ref:
        token_ids(ref.generate(list(range(10, 30)), greedy(100)))
        more = back.tokens + [1, 2]
        assert token_ids(back.generate(more, greedy(6))) == token_ids(ref.generate(more, greedy(6)))
    b.close()


def test_a_prompt_that_cannot_fit_beside_running_turns_is_refused_with_the_numbers(small_pool):
    a, b, c = small_pool.open_session(), small_pool.open_session(), small_pool.open_session()
    running = [a.generate(list(range(10, 110)), greedy(27)), b.generate(list(range(10, 110)), greedy(27))]
    for stream in running:
        next(stream)  # both have read their 100-token prompts: 200 of 256 cells are held by running turns
    with pytest.raises(CapacityError, match=r"prompt needs 101 free tokens of the K/V pool \(prompt 100, 0 already "
                                            r"held\), but the pool holds 256 tokens .* running turns \(2\) hold"):
        token_ids(c.generate(list(range(10, 110)), greedy(5)))
    assert [len(token_ids(s)) for s in running] == [26, 26]  # the admitted turns finish, untouched
    assert len(token_ids(c.generate(list(range(10, 110)), greedy(5)))) == 5  # c was not poisoned
    for s in (a, b, c):
        s.close()


def test_idle_sessions_beside_a_running_turn_park_down_to_their_share(make_engine, tiny_models):
    """Every step walks past the cells below the pool's top, so idle sessions do not keep more than
    their share (kv_room.IDLE_FLOOR here) resident while a turn runs, even with the pool far from
    full; the least recently used park first, and one parked continues with the tokens it would have had."""
    from engine import kv_room

    engine = make_engine(tiny_models["llama"], "llamacpp", max_context=512)
    assert engine.capacity().pool_tokens >= 4 * 512  # room for every session below: none has to park
    sessions = [engine.open_session() for _ in range(6)]
    firsts = [token_ids(s.generate(list(range(10 + 7 * i, 110 + 7 * i)), greedy(100))) for i, s in enumerate(sessions)]
    # a turn long enough for parks to pay: about 150 rows to go against a break-even made for this test
    # (the tiny model's own is 427 rows: masked cells cost little, llamacpp_model.SKIP_S)
    engine._worker.backend.park_break_even = 100
    with engine.open_session() as running:
        assert len(token_ids(running.generate(list(range(300, 320)), greedy(150)))) == 150
    slots = [engine._worker.slots[s.id] for s in sessions]
    parked = [slot.parked is not None for slot in slots]
    assert engine._worker.room.parks == sum(parked) >= 3
    assert parked == sorted(parked, reverse=True)  # the least recently used went first
    assert sum(len(slot.fed) for slot in slots if slot.parked is None) <= kv_room.IDLE_FLOOR
    more = sessions[0].tokens + [5, 6]
    again = token_ids(sessions[0].generate(more, greedy(6)))
    with make_engine(tiny_models["llama"], "llamacpp", max_context=512).open_session() as ref:
        assert token_ids(ref.generate(list(range(10, 110)), greedy(100))) == firsts[0]
        assert token_ids(ref.generate(more, greedy(6))) == again
    for s in sessions:
        s.close()
