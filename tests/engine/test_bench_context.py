"""The bench's decode-vs-context figures: both from one engine, positive, with their ratio."""

from __future__ import annotations

from engine.bench.context import context_figures, context_rows


def test_context_figures_are_measured_in_one_run(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "torch", max_context=512)
    said = []
    figures = context_figures(engine, said.append, long_context=300)
    assert set(figures) == {"decode_ms_ctx64", "decode_ms_ctx4k", "decode_ctx4k_vs_ctx64"}
    assert figures["decode_ms_ctx64"] > 0 and figures["decode_ms_ctx4k"] > 0
    assert figures["decode_ctx4k_vs_ctx64"] == round(figures["decode_ms_ctx4k"] / figures["decode_ms_ctx64"], 2)
    assert said and "ms/token" in said[0]
    assert [k for k, _ in context_rows(figures)] == ["decode at ~64 context", "decode at ~4k context"]


def test_long_context_is_capped_by_max_context(make_engine, tiny_models):
    engine = make_engine(tiny_models["llama"], "torch", max_context=128)
    figures = context_figures(engine, lambda *a: None, long_context=4000)  # would overflow without the cap
    assert figures["decode_ms_ctx4k"] > 0
