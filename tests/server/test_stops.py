"""Stop strings on streamed text: never sent, found even when split across pieces."""

from __future__ import annotations

import pytest

from engine.server.stops import StopMatcher


def _run(stops, pieces):
    matcher = StopMatcher(stops)
    sent = [matcher.feed(p) for p in pieces]
    if not matcher.stopped:
        sent.append(matcher.flush())
    return "".join(sent), matcher.stopped


@pytest.mark.parametrize("stops, pieces, expected", [
    (["END"], ["Hello ", "world"], ("Hello world", False)),
    (["END"], ["Hello E", "N", "D and more"], ("Hello ", True)),
    (["END"], ["abcEN"], ("abcEN", False)),  # a partial match at the very end is not a stop
    (["\n\n", "###"], ["a\n", "\nb"], ("a", True)),
    (["###", "##"], ["x##y"], ("x", True)),
    ([], ["anything"], ("anything", False)),
])
def test_stop_strings(stops, pieces, expected):
    assert _run(stops, pieces) == expected


def test_text_that_may_start_a_stop_is_held_back_until_known():
    matcher = StopMatcher(["STOP"])
    assert matcher.feed("go ST") == "go "
    assert matcher.feed("AY") == "STAY"
