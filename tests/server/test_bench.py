"""`python -m engine serve --bench --json` prints every figure the issue names (on a tiny model,
so it runs in seconds; the figures themselves are for people, never asserted)."""

from __future__ import annotations

import json

from engine.__main__ import main

KEYS = {"http_aggregate_tok_s", "inproc_aggregate_tok_s", "ttft_overhead_ms", "ttft_warm_s", "ttft_cold_s",
        "rss_server_off_mib", "rss_server_on_mib", "remote_aggregate_tok_s", "remote_vs_inproc",
        "json_schema_vs_free_1", "json_schema_vs_free_8", "tool_call_ttft_ms", "mask_share_1", "mask_share_8",
        "messages_vs_chat", "ttft_messages_ms", "ttft_chat_ms",
        "responses_vs_chat", "responses_chained_ttft_s", "responses_resend_ttft_s", "responses_chained_cached"}


def test_bench_json_has_every_figure(tiny_models, capsys):
    assert main(["serve", "--bench", "--json", "--model", str(tiny_models["llama"]), "--backend", "torch",
                 "--dtype", "float32"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert KEYS <= figures.keys()
    assert figures["http_aggregate_tok_s"] > 0 and figures["inproc_aggregate_tok_s"] > 0
    assert figures["remote_aggregate_tok_s"] > 0
    assert figures["messages_aggregate_tok_s"] > 0 and figures["chat_aggregate_tok_s"] > 0
    assert 0 < figures["mask_share_8"] < 1
    assert figures["json_schema_tok_s_8"] > 0 and figures["free_tok_s_8"] > 0 and figures["tool_call_ttft_ms"] > 0
    assert figures["conversation_tokens"] >= 1500  # the warm/cold turn is on a long conversation
    assert figures["responses_aggregate_tok_s"] > 0 and figures["chat_aggregate_tok_s"] > 0
    # previous_response_id continued on the stored session: the whole conversation was reused.
    assert figures["responses_chained_cached"] >= figures["responses_history_tokens"]
