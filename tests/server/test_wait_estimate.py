"""A client refused for capacity is told how long the running turns need (Retry-After), not a
fixed second that makes SDKs spend their retries at once."""

from __future__ import annotations

import time

from engine.server.wait_estimate import UNMEASURED_WAIT_S, Turn, WaitEstimate


def running(done: int, took_s: float, left: int) -> tuple[Turn, int]:
    """A turn that read/produced `done` tokens in `took_s` seconds and has `left` to go at most."""
    turn = Turn(end_tokens=1000 + done + left, start_tokens=1000, began=time.monotonic() - took_s)
    return turn, 1000 + done


def test_the_wait_is_the_soonest_turns_tokens_left_at_its_own_speed():
    seconds, why = WaitEstimate().wait([running(100, 2.0, 1010), running(100, 2.0, 4000)])
    assert seconds == 21  # 1,010 tokens at 50 tok/s: 20.2 s
    assert "first of 2 running turns" in why and "1010 tokens left at 50.0 tok/s" in why


def test_a_turn_too_young_to_time_takes_the_speed_of_finished_ones():
    waits = WaitEstimate()
    waits.finished(*running(400, 4.0, 0))  # 100 tok/s
    seconds, _ = waits.wait([running(0, 0.01, 250)])
    assert seconds == 3  # 250 tokens at 100 tok/s


def test_nothing_timed_yet_is_a_guess_said_to_be_one():
    seconds, why = WaitEstimate().wait([running(0, 0.01, 500)])
    assert seconds == UNMEASURED_WAIT_S and "no running turn has been timed yet" in why


def test_the_wait_stays_within_a_second_and_ten_minutes():
    assert WaitEstimate().wait([running(100, 1.0, 5)])[0] == 1
    assert WaitEstimate().wait([running(1, 10.0, 100_000)])[0] == 600
