"""The decode-thread policy's decisions, on made-up call times and a fake clock (nothing is timed)."""

from __future__ import annotations

from engine.backends.thread_policy import WINDOW, ThreadPolicy, starting_threads


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


def test_threads_that_get_little_of_their_cores_drop_one_without_a_quiet_time_to_compare():
    """A machine busy from the start: every call is slow, so no jump is ever seen; but two threads
    got 0.09–0.15 of a core each (load average 9 on two cores) and one thread decoded 1.6–1.9× faster."""
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    changes = []
    for _ in range(WINDOW + 1):
        clock.now += 0.050
        change = policy.record(0.050, 1, cpu_seconds=0.015)  # 0.15 of each of 2 cores
        changes += [change] if change is not None else []
    assert changes == [1]


def test_threads_that_get_their_cores_are_kept():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    changes = []
    for _ in range(1000):
        clock.now += 0.010
        change = policy.record(0.010, 1, cpu_seconds=0.019)  # 0.95 of each core: quiet
        changes += [change] if change is not None else []
    assert changes == [] and policy.threads == 2


def test_a_count_a_probe_proved_faster_is_not_dropped_for_its_share():
    """Where even the better count gets little of its cores (a crowded machine), the share rule must
    not undo what the probe just measured, or the count would see-saw every few calls."""
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)

    def calls(seconds, cpu, n=WINDOW):
        out = []
        for _ in range(n):
            clock.now += seconds
            change = policy.record(seconds, 1, cpu_seconds=cpu)
            out += [change] if change is not None else []
        return out

    assert calls(0.050, 0.015, WINDOW + 1) == [1]  # starved at 2: down to 1
    calls(0.040, 0.020)
    clock.now += 5.0
    assert calls(0.040, 0.020, 1) == [2]  # probe 2 again
    assert calls(0.030, 0.020) == []  # faster, though still starved: kept
    assert calls(0.030, 0.020, 100) == [] and policy.threads == 2


def test_a_probe_whose_calls_stall_now_and_then_is_not_kept():
    """On a crowded machine the probed count's median can look faster while one call in six stalls
    for a second (seen: p50 45 ms, p99 2.7 s at two threads under a load average of 9)."""
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    feed(policy, clock, 0.050)  # dropped to 1
    feed(policy, clock, 0.040)
    clock.now += 5.0
    assert feed(policy, clock, 0.040, calls=1) == [2]
    changes = feed(policy, clock, 0.020, calls=WINDOW - 1) + feed(policy, clock, 1.0, calls=1)
    assert changes == [1]  # median 20 ms, but 183 ms a call on average: back to one thread


def test_a_crowded_machine_starts_with_its_share_of_threads():
    assert starting_threads(2, load=0.5, cores=2) == 2  # quiet
    assert starting_threads(2, load=2.0, cores=2) == 2  # busy, not crowded
    assert starting_threads(2, load=9.0, cores=2, busy=2.0) == 1  # a load average of 9 on two cores
    assert starting_threads(16, load=20.0, cores=16, busy=16.0) == 12
    assert starting_threads(1, load=50.0, cores=2, busy=2.0) == 1


def test_a_load_average_that_remembers_work_that_has_ended_keeps_every_thread():
    """The load average is a minute's memory: just after a benchmark ended it still says 2.3 on two
    cores, while the cores are idle. Started on one thread, the server read prompts at half speed."""
    assert starting_threads(2, load=2.3, cores=2, busy=0.1) == 2
    assert starting_threads(2, load=2.3, cores=2, busy=1.9) == 1
    assert starting_threads(2, load=2.3, cores=2, busy=0.9) == 1  # a bursty neighbour between bursts


def test_the_cores_busy_now_are_sampled_only_when_the_load_average_is_high(monkeypatch):
    from engine.backends import thread_policy

    sampled = []
    monkeypatch.setattr(thread_policy, "busy_cores", lambda cores: sampled.append(cores) or 0.0)
    assert starting_threads(2, load=1.0, cores=2) == 2 and sampled == []
    assert starting_threads(2, load=3.0, cores=2) == 2 and sampled == [2]
    assert ThreadPolicy(2, Clock(), start=1).threads == 1


def test_one_stalled_call_ends_a_probe_at_once():
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    feed(policy, clock, 0.050)  # dropped to 1
    feed(policy, clock, 0.040)
    clock.now += 5.0
    assert feed(policy, clock, 0.040, calls=1) == [2]
    assert feed(policy, clock, 0.020, calls=1) + feed(policy, clock, 2.0, calls=1) == [1]


def test_a_drop_that_is_not_faster_goes_back_and_takes_the_slower_time_as_normal():
    """A light neighbour (the HTTP clients of `engine serve` on the same two cores) slows calls now and
    then by 1.4× without making one thread any faster: the drop goes back, and stays back. Before, the
    policy kept every drop and see-sawed between one and two threads every few seconds (8 clients at
    93–150 tok/s where two threads kept gave 160–180)."""
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)  # quiet at 2 threads
    assert feed(policy, clock, 0.015) == [1]  # 1.5×: a neighbour?
    assert feed(policy, clock, 0.016) == [2]  # one thread is no faster: back to 2
    assert feed(policy, clock, 0.015, calls=1000) == [] and policy.threads == 2  # the new normal


def test_a_drop_under_a_heavy_neighbour_is_kept():
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    assert feed(policy, clock, 0.030) == [1]  # a busy core: two threads wait at every barrier
    assert feed(policy, clock, 0.020, calls=3 * WINDOW) == []  # one thread is faster: kept
    assert policy.threads == 1


def test_a_stall_right_after_a_drop_does_not_undo_it():
    """The stall rule ends probes of one thread more; one thread fewer cannot wait at a barrier for a
    descheduled partner, so a slow call after a drop is the neighbour, not the count."""
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    assert feed(policy, clock, 0.050) == [1]
    assert feed(policy, clock, 0.020, calls=1) + feed(policy, clock, 0.200, calls=1) == []
    assert policy.threads == 1


def test_a_drop_whose_calls_end_before_it_is_judged_goes_back_for_the_next_shape():
    """Measured on a quiet machine: a few slow calls at the end of one reply dropped a thread, the
    reply ended before one thread fewer could be judged, and the next 8 clients decoded on the
    unproven count until a probe, 5 s later."""
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    assert feed(policy, clock, 0.015) == [1]  # a jump at the end of a reply: judged on the next calls
    assert feed(policy, clock, 0.040, calls=1, tokens=8) == [2]  # they are of another shape: back
    assert feed(policy, clock, 0.040, calls=3 * WINDOW, tokens=8) == [] and policy.threads == 2


def test_a_prompt_read_never_runs_on_a_drop_still_being_judged():
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    assert policy.reading() is None  # nothing pending: the count stays
    assert feed(policy, clock, 0.015) == [1]
    assert policy.reading() == 2 and policy.threads == 2
    assert policy.reading() is None


def test_a_proven_drop_stays_for_a_prompt_read():
    clock = Clock()
    policy = ThreadPolicy(2, clock, probe_s=5.0)
    feed(policy, clock, 0.010)
    assert feed(policy, clock, 0.030) == [1]
    assert feed(policy, clock, 0.020) == []  # one thread is faster under this neighbour: kept
    assert policy.reading() is None and policy.threads == 1


def test_eight_rows_that_slow_as_their_contexts_grow_are_not_a_neighbour():
    """Eight clients of the bundled model: 8-row calls grew from 35 to 52 ms within five seconds as
    the replies lengthened (from 35 to 155 positions a row; a quiet 2-core EPYC). Compared across
    contexts that read as a neighbour, and each reply ran two windows on one thread."""
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    changes = []
    for i in range(121):
        seconds = 0.035 + 0.017 * i / 120
        clock.now += seconds
        change = policy.record(seconds, 8, context=8 * (35 + i))
        if change is not None:
            changes.append(change)
    assert changes == [] and policy.threads == 2


def test_a_neighbour_that_comes_as_the_context_band_changes_is_still_seen():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    for context, seconds in ((400, 0.035), (600, 0.036)):  # the first band quiet, then the next...
        for _ in range(WINDOW):
            clock.now += seconds
            assert policy.record(seconds, 8, context=context) is None
    changes = []
    for _ in range(WINDOW):  # ...and a band later a neighbour takes a core as it starts: 3× slower
        clock.now += 0.110
        change = policy.record(0.110, 8, context=900)
        if change is not None:
            changes.append(change)
    assert changes == [1]


def test_a_jump_within_one_context_band_drops_a_thread():
    clock = Clock()
    policy = ThreadPolicy(2, clock)
    changes = []
    for seconds in [0.040] * WINDOW + [0.060] * WINDOW:
        clock.now += seconds
        change = policy.record(seconds, 8, context=1000)
        if change is not None:
            changes.append(change)
    assert changes == [1]
