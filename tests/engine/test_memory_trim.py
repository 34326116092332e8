"""An engine hands the memory its replies freed back to the system once it has nothing left to do
(glibc keeps freed heap memory otherwise: the app's resident memory climbed with ordinary use)."""

from __future__ import annotations

import sys

import pytest

from engine import SamplingParams, memory_trim
from tests.engine.helpers import prompt_ids

GREEDY = SamplingParams(temperature=0, max_tokens=4, ignore_stop=True)


def test_freed_memory_goes_back_once_per_busy_spell(tiny_engine, monkeypatch):
    trims = []
    monkeypatch.setattr(memory_trim, "give_back_freed_memory", lambda: trims.append(1) or True)
    tiny_engine._call(lambda worker: None)  # idle since load: nothing to give back
    assert trims == []
    with tiny_engine.open_session() as a, tiny_engine.open_session() as b:
        first = a.generate(prompt_ids(tiny_engine, "Hello"), GREEDY)
        second = b.generate(prompt_ids(tiny_engine, "Hi there"), GREEDY)
        first.text(), second.text()
        tiny_engine._call(lambda worker: None)  # runs once the engine thread went idle again
    assert trims == [1], "one trim when both replies had ended, none while they ran"
    tiny_engine._call(lambda worker: None)
    assert trims == [1], "requests that start no reply do not trim again"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim is Linux's")
def test_the_c_library_gives_memory_back_on_linux():
    assert memory_trim.give_back_freed_memory() is True
