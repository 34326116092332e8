"""The decode-thread policy's decisions, on made-up call times and a fake clock (nothing is timed)."""

from __future__ import annotations

from engine.backends.thread_policy import WINDOW, ThreadPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def feed(policy: ThreadPolicy, clock: Clock, seconds: float, calls: int = WINDOW, tokens: int = 1) -> list[int]:
    changes = []
    for _ in range(calls):
        clock.now += seconds
        change = policy.record(seconds, tokens)
        if change is not None:
            changes.append(change)
    return changes


def test_a_quiet_machine_keeps_every_thread():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    assert feed(policy, clock, 0.010, calls=1000) == []
    assert policy.threads == 2


def test_a_jump_in_time_per_call_drops_a_thread():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    feed(policy, clock, 0.010)  # the quiet speed at 2 threads is known
    assert feed(policy, clock, 0.050) == [1]  # a neighbour took a core: 5× slower
    assert policy.threads == 1


def test_one_slow_call_is_not_a_jump():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    feed(policy, clock, 0.010)
    assert feed(policy, clock, 0.200, calls=1) + feed(policy, clock, 0.010) == []


def test_a_probe_that_is_faster_is_kept():
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    feed(policy, clock, 0.050)  # dropped to 1
    feed(policy, clock, 0.020)  # the speed at 1 thread
    clock.now += 5.0
    assert feed(policy, clock, 0.020, calls=1) == [2]  # time to probe one more
    assert feed(policy, clock, 0.010) == []  # faster: kept
    assert policy.threads == 2


def test_a_probe_that_is_not_faster_goes_back_and_waits_twice_as_long():
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    feed(policy, clock, 0.050)  # dropped to 1
    feed(policy, clock, 0.020)
    clock.now += 5.0
    assert feed(policy, clock, 0.020, calls=1) == [2]
    assert feed(policy, clock, 0.060) == [1]  # slower with the neighbour still there: back to 1
    feed(policy, clock, 0.020)
    clock.now += 5.0
    assert feed(policy, clock, 0.020) == []  # not yet: the next probe waits 10 s
    clock.now += 5.0
    assert feed(policy, clock, 0.020, calls=1) == [2]


def test_calls_of_another_shape_are_not_compared():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    feed(policy, clock, 0.010, tokens=1)
    assert feed(policy, clock, 0.050, tokens=8) == []  # a batch of 8 is slower, not contended
    assert policy.threads == 2


def test_one_thread_is_the_floor():
    clock = Clock()
    policy = ThreadPolicy(1, clock)
    feed(policy, clock, 0.010)
    assert feed(policy, clock, 0.100) == [] and policy.threads == 1


def test_a_neighbour_that_arrived_during_another_shape_is_still_seen():
    """The quiet speed of a shape is remembered across other shapes: a prompt read (another shape)
    often runs just as a neighbour starts, and the decode calls after it must not take the contended
    time as their new normal (two engine processes kept 0.17× each that way)."""
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    feed(policy, clock, 0.010, calls=WINDOW + 1, tokens=1)  # quiet decode at 2 threads (known)
    feed(policy, clock, 0.100, calls=2, tokens=200)  # a prompt read
    # decode again (the first call of a new shape is not counted), now 5× slower: a neighbour
    assert feed(policy, clock, 0.050, calls=WINDOW + 1, tokens=1) == [1]
    assert policy.threads == 1


def test_a_probe_kept_under_a_lasting_neighbour_is_not_dropped_again():
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    feed(policy, clock, 0.050)  # dropped to 1
    feed(policy, clock, 0.030)
    clock.now += 5.0
    assert feed(policy, clock, 0.030, calls=1) == [2]
    assert feed(policy, clock, 0.020) == []  # faster than 1 thread, slower than quiet: kept
    assert feed(policy, clock, 0.020, calls=100) == []  # and that is the new normal, no see-saw
    assert policy.threads == 2


def test_calls_that_slow_as_the_context_grows_are_not_a_neighbour():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    seconds, changes = 0.010, []
    for _ in range(3000):  # 2× slower over about 45 s, 0.02 % a call: a long reply's growing context
        seconds *= 1.00023
        changes += feed(policy, clock, seconds, calls=1)
    assert changes == [] and policy.threads == 2
