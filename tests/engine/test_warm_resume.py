"""A turn that extends the session's tokens prefills only the new suffix."""

from __future__ import annotations

from engine import SamplingParams

GREEDY = SamplingParams(temperature=0, max_tokens=24)


def reply(stream):
    chunks = list(stream)
    return "".join(c.text for c in chunks), chunks[-1]


def test_second_chat_turn_prefills_only_its_suffix(make_engine, backend):
    engine = make_engine("bundled:smollm2-135m-instruct", backend)
    with engine.open_session() as s:
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        text, last = reply(s.chat(messages, GREEDY))
        assert "Paris" in text
        assert last.stats.prefilled_tokens == last.stats.prompt_tokens
        held = len(s.tokens)
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "And of Italy?"}]
        text2, last2 = reply(s.chat(messages, GREEDY))
        assert "Rome" in text2
        # Only the new turn (plus the reply's last token, fed lazily) goes through the model.
        new_turn = last2.stats.prompt_tokens - held
        assert last2.stats.prefilled_tokens == new_turn + 1
        assert new_turn < 20


def test_exact_reply_ids_are_kept_when_the_template_would_retokenize(tiny_engine):
    with tiny_engine.open_session() as s:
        messages = [{"role": "user", "content": "hi"}]
        text, last = reply(s.chat(messages, SamplingParams(temperature=0, max_tokens=12, ignore_stop=True)))
        ids = s.tokens
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "more"}]
        _, last2 = reply(s.chat(messages, SamplingParams(temperature=0, max_tokens=2)))
        # Random-weight replies rarely tokenize back to the same ids; the session still reuses them.
        assert s.tokens[: len(ids)] == ids
        assert last2.stats.prefilled_tokens < last2.stats.prompt_tokens - len(ids) + 2


def test_diverging_prompt_reuses_the_common_prefix_or_resets(tiny_engine):
    with tiny_engine.open_session() as s:
        first = list(range(200, 240))
        list(s.generate(first, GREEDY))
        _, last = reply(s.generate(first[:30] + [7, 8, 9], GREEDY))
        assert last.stats.prefilled_tokens == 3
        assert s.tokens[:33] == first[:30] + [7, 8, 9]
        _, last = reply(s.generate([9, 9, 9], GREEDY))
        assert last.stats.prefilled_tokens == 3


def test_continuing_a_cut_reply_extends_it_warm(make_engine, backend):
    engine = make_engine("bundled:smollm2-135m-instruct", backend)
    short = SamplingParams(temperature=0, max_tokens=6)
    with engine.open_session() as s:
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        text, last = reply(s.chat(messages, short))
        assert last.finish_reason == "length"
        held = s.tokens
        more, last2 = reply(s.chat(messages + [{"role": "assistant", "content": text}], short,
                                   continue_final=True))
        assert more
        # The open turn is what the session holds: only the lazily fed last token is prefilled.
        assert last2.stats.prefilled_tokens == 1
        assert s.tokens[: len(held)] == held
        # The same text as one uninterrupted reply of twice the length.
        with engine.open_session() as fresh:
            whole, _ = reply(fresh.chat(messages, SamplingParams(temperature=0, max_tokens=12)))
        assert text + more == whole
