"""`python -m engine bench --repetition`: what counts as a loop, and the figures it prints."""

from __future__ import annotations

import json

import pytest

from engine.bench.repetition import SETTINGS, loop_figures
from tests.engine.test_cli import run


@pytest.mark.parametrize("text, loops", [
    ("A leaf that brings a leaf that brings a leaf that brings a leaf that brings a leaf.", True),
    ("The cat sat on the mat. The cat sat on the mat. The cat sat on the mat.", True),
    ("The cat sat on the mat. Then the cat sat on the mat again, and slept.", False),  # said twice: a phrase
    ("Bread is made of flour, water, salt and yeast, kneaded and baked.", False),
])
def test_a_loop_is_a_word_4gram_said_three_times(text, loops):
    assert loop_figures(text)[0] is loops


def test_repeated_4grams_count_each_repeat_once():
    looped, repeats, grams = loop_figures("one two three four one two three four")
    assert (looped, repeats, grams) == (False, 1, 5)


def test_bench_repetition_json_has_every_setting(tiny_q4_gguf):
    out = run("bench", "--repetition", "--model", str(tiny_q4_gguf), "--backend", "torch", "--prompts", "2",
              "--tokens", "12", "--json")
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert figures["prompts"] == 2 and figures["max_tokens"] == 12
    assert set(figures["settings"]) == set(SETTINGS)
    for each in figures["settings"].values():
        assert set(each) == {"loop_rate", "repeated_4grams", "run_on_rate", "mean_tokens"}
        assert 0 < each["mean_tokens"] <= 12
