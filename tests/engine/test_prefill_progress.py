"""A long prompt reports how far it has been read, chunk by chunk, before the first token."""

from __future__ import annotations

from engine import SamplingParams

GREEDY = SamplingParams(temperature=0, max_tokens=3, ignore_stop=True)


def test_long_prompt_reports_progress_per_prefill_chunk(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, prefill_chunk=8)
    with engine.open_session() as s:
        chunks = list(s.generate(list(range(5, 25)), GREEDY))  # 20 tokens: forwards of 8, 8, 4
    progress = [c.prefill for c in chunks if c.prefill is not None]
    assert progress == [(8, 20), (16, 20)]  # none after the last forward: the first token follows
    for c in chunks:
        if c.prefill is not None:
            assert c.text == "" and c.token_ids == () and c.finish_reason is None
    assert chunks[: len(progress)] == [c for c in chunks if c.prefill is not None]  # all before any token
    assert sum(len(c.token_ids) for c in chunks) == 3
    assert chunks[-1].stats.prefilled_tokens == 20


def test_short_prompt_and_warm_resume_report_only_what_is_read(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, prefill_chunk=8)
    with engine.open_session() as s:
        first = list(s.generate([5, 6, 7], GREEDY))
        assert all(c.prefill is None for c in first)  # one forward: nothing to report
        more = list(s.generate(s.tokens + list(range(30, 42)), GREEDY))
    # 12 new tokens plus the last reply token (sampled, never fed): 13 to read, the rest resident
    assert [c.prefill for c in more if c.prefill is not None] == [(8, 13)]


def test_cancel_while_reading_a_long_prompt_stops_at_the_next_chunk(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend, prefill_chunk=8)
    with engine.open_session() as s:
        stream = s.generate(list(range(5, 205)), GREEDY)  # 200 tokens: 25 forwards
        assert next(stream).prefill == (8, 200)
        s.cancel()
        rest = list(stream)
    assert rest[-1].finish_reason == "cancelled"
    assert len([c for c in rest if c.prefill is not None]) <= 2  # at most the forwards already under way
    assert sum(len(c.token_ids) for c in rest) == 0
