"""The engine's commands, run as a user would run them."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "engine", *args], input=stdin, capture_output=True, text=True, timeout=600
    )


def test_chat_streams_replies_and_keeps_context(backend):
    out = run("chat", "--backend", backend, "--dtype", "float32", "--temperature", "0", "--max-tokens", "30",
              stdin="What is the capital of France?\nAnd of Italy?\n/quit\n")
    assert out.returncode == 0, out.stderr
    assert "Paris" in out.stdout and "Rome" in out.stdout
    assert "tok/s" in out.stderr and "smollm2" in out.stderr


def test_chat_reports_a_bad_model_clearly():
    out = run("chat", "--model", "/no/such/model")
    assert out.returncode == 1
    assert "error: model not found: /no/such/model does not exist" in out.stderr


def test_bench_json_has_the_documented_figures(tiny_q4_gguf):
    """Every figure README documents, on a tiny GGUF in the bundled model's 4-bit formats (the bundled
    model's own run is 6x longer and proves nothing more about the JSON)."""
    out = run("bench", "--backend", "torch", "--model", str(tiny_q4_gguf), "--sessions", "1,2", "--tokens", "8",
              "--prefill-tokens", "64", "--long-context", "200", "--json")
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert figures["decode_ms_ctx64"] > 0 and figures["decode_ms_ctx4k"] > 0
    for key in ("decode_tok_s", "aggregate_tok_s", "library_decode_tok_s", "weights_bytes",
                "bytes_per_session", "peak_rss_bytes", "ttft_idle_s", "ttft_busy8_s", "linear_8_rows_cost",
                "prefill_tok_s", "prefill_tok_s_bf16", "decode_tok_s_bf16", "aggregate8_tok_s_bf16",
                "weights_bytes_bf16", "dtype_reason", "quantized"):
        assert key in figures
    assert figures["quantized"].startswith("int4")  # a Q4_0/Q4_1 GGUF stays 4-bit
    assert figures["weights_bytes"] < figures["weights_bytes_bf16"]
    maps = ("aggregate_tok_s", "unbatched_aggregate_tok_s", "library_aggregate_tok_s", "per_session_tok_s")
    assert all(set(figures[key]) == {"1", "2"} for key in maps)
    assert all(v > 0 for key in maps for v in figures[key].values())
    assert figures["ttft_idle_s"] > 0 and figures["ttft_busy8_s"] > 0
    assert figures["decode_tok_s"] > 0 and figures["library_decode_tok_s"] > 0


def test_bench_covers_every_installed_backend_by_default():
    import importlib.util

    from engine import backends

    expected = {name for name, module in (("torch", "torch"), ("mlx", "mlx_lm"), ("llamacpp", "llama_cpp"))
                if importlib.util.find_spec(module)}
    assert set(backends.installed()) == expected
    assert backends.installed()[0] == backends.default_backend()


def test_bench_reports_a_bad_model_clearly():
    out = run("bench", "--model", "/no/such/model", "--sessions", "1", "--tokens", "2")
    assert out.returncode == 1
    assert "error: model not found: /no/such/model does not exist" in out.stderr


def test_bench_contended_measures_beside_a_busy_core_and_a_second_process(tiny_models):
    out = run("bench", "--backend", "torch", "--model", str(tiny_models["llama"]), "--sessions", "1",
              "--tokens", "4", "--prefill-tokens", "64", "--contended", "--json")
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert figures["decode_tok_s_contended"] > 0 and figures["decode_tok_s_two_procs"] > 0
