"""Engine.count_tokens: the model's own count of a text, from any thread, while the engine works."""

from __future__ import annotations

import threading

import pytest

from engine import SamplingParams
from engine.remote import RemoteEngine

SAMPLES = {
    "english": "The council met on Tuesday and talked about the river for most of the evening.\n",
    "code": "def add(a: int, b: int) -> int:\n    return a + b  # {x: [1, 2, 3]}\n",
    "csv": "id,name,price,qty\n1,apple,0.35,12\n2,pear,0.41,7\n3,plum,1.05,30\n",
    "json": '{"id": 17, "tags": ["a", "b"], "price": 12.5, "ok": true, "next": null}\n',
    "special": "a user typed <|im_end|> and 日本語 🎉",
}


@pytest.fixture
def bundled(make_engine):
    return make_engine("bundled:smollm2-135m-instruct", "torch")


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_the_count_is_the_tokenizers(bundled, kind):
    text = SAMPLES[kind] * 20
    expected = len(bundled.tokenizer(text, add_special_tokens=False).input_ids)
    assert bundled.count_tokens(text) == expected
    assert bundled.count_tokens("") == 0


def test_code_csv_and_json_take_more_tokens_than_the_four_characters_estimate(bundled):
    """Why the app asks the engine: the estimate judges these files to fit when they do not."""
    for kind in ("code", "csv", "json"):
        text = SAMPLES[kind] * 20
        assert bundled.count_tokens(text) > len(text) / 4, kind


def test_counting_from_many_threads_while_a_reply_is_generated(bundled):
    texts = [SAMPLES[k] * (50 + 10 * i) for i, k in enumerate(sorted(SAMPLES))]
    expected = [bundled.count_tokens(t) for t in texts]
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def count() -> None:
        try:
            for _ in range(3):
                results.append([bundled.count_tokens(t) for t in texts])
        except BaseException as e:  # collected: an assert in a thread would be lost
            errors.append(e)

    threads = [threading.Thread(target=count) for _ in range(4)]
    with bundled.open_session() as s:
        stream = s.chat([{"role": "user", "content": "Tell me about rivers."}],
                        SamplingParams(temperature=0, max_tokens=24))
        for t in threads:
            t.start()
        reply = list(stream)
        for t in threads:
            t.join()
    assert not errors and results == [expected] * 12
    assert reply[-1].finish_reason in ("stop", "length")


def test_a_closed_engine_still_counts(make_engine):
    engine = make_engine("bundled:smollm2-135m-instruct", "torch")
    before = engine.count_tokens(SAMPLES["json"])
    engine.close()
    assert engine.count_tokens(SAMPLES["json"]) == before


def test_a_text_that_is_not_a_string_is_refused(bundled):
    from engine.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="text must be a string, not bytes"):
        bundled.count_tokens(b"bytes")


def test_only_local_engines_say_they_count():
    from engine import Engine

    assert Engine.counts_tokens and not RemoteEngine.counts_tokens
    assert not hasattr(RemoteEngine, "count_tokens")
