"""Command line: `python -m engine chat` (interactive, streaming), `bench`, `serve` (the
OpenAI-compatible HTTP server), `pull REPO[:FILE]` (download from Hugging Face) and `check [MODEL]`
(are this CPU's kernels computing the model's logits right?)."""

from __future__ import annotations

import argparse
import os
import sys

from .cli.options import add_gpu_layers, add_kv_cache
from .models import DEFAULT_MODEL


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    chat = sub.add_parser("chat", help="chat with a model in the terminal")
    chat.add_argument("--model", default=None, help="bundled:NAME, a model folder or a .gguf file (default "
                      f"{DEFAULT_MODEL}); with --server, the server's model name (default: the first it lists)")
    chat.add_argument("--server", default=None, metavar="URL",
                      help="chat with a model served elsewhere: its OpenAI base URL, e.g. http://127.0.0.1:8317/v1")
    chat.add_argument("--api-key", default=None, help="with --server: the server's API key")
    chat.add_argument("--backend", default="auto", choices=["auto", "torch", "mlx", "llamacpp"],
                      help="auto: a .gguf on llama.cpp where llama-cpp-python imports, folders on torch (MLX on Apple Silicon)")
    chat.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    chat.add_argument("--temperature", type=float, default=0.7)
    chat.add_argument("--max-tokens", type=int, default=512)
    chat.add_argument("--system", default=None, help="system prompt")
    add_gpu_layers(chat)
    add_kv_cache(chat)

    bench = sub.add_parser("bench", help="measure load, prefill and decode speed against the plain library")
    bench.add_argument("--model", default=DEFAULT_MODEL)
    bench.add_argument("--backend", default="all", type=_backend_list,
                       help="comma-separated: torch, mlx, llamacpp, auto; all (the default) benches every installed "
                            "backend that can load the model, one after the other")
    bench.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    bench.add_argument("--sessions", default=None,
                       help="comma-separated concurrent session counts (default 1,2,4,8,16; with --agents 8)")
    bench.add_argument("--tokens", type=int, default=None,
                       help="tokens to generate per session (default 64; with --speculative 400, the whole edited file; "
                            "with --repetition 256 per reply)")
    bench.add_argument("--long-context", type=int, default=4000,
                       help="context of the decode_ms_ctx4k figure (tokens; default 4000)")
    bench.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    bench.add_argument("--prefill-tokens", type=int, default=2000, help="prompt length the prefill figures use")
    bench.add_argument("--contended", action="store_true",
                       help="also decode beside a CPU-bound process on one core, and two engine processes at once")

    bench.add_argument("--speculative", action="store_true",
                       help="llama.cpp: tok/s with and without drafted tokens on code edits, free chat and 8 edits "
                            "at once (edit_speedup, chat_speedup, acceptance)")
    bench.add_argument("--vision", action="store_true",
                       help="images on llama.cpp: encode time and time to first token for a 512×512 image, and 8 "
                            "sessions' decode with 2 images against all text (--model: a vision GGUF with its mmproj; "
                            "default: random-weight SmolVLM-shaped models built here)")
    bench.add_argument("--repetition", action="store_true",
                       help="how often replies loop (a word 4-gram said 3 times) over 50 short chat prompts, for a few "
                            "sampling settings (greedy, temperature, top-k/min-p, repeat and frequency penalties)")
    bench.add_argument("--prompts", type=int, default=50, help="with --repetition: how many of its prompts to ask")
    bench.add_argument("--draft-model", default=None, metavar="SOURCE",
                       help="with --speculative: drafts also come from this small model of the same vocabulary")
    bench.add_argument("--retrieval", action="store_true",
                       help="the document library's retrieval on Python's language reference (pydoc_data.topics): "
                            "recall@1/@5 of vectors, BM25 and hybrid, and the embedding model's chunks/s")
    bench.add_argument("--embedding-model", default=None, metavar="SOURCE",
                       help="with --retrieval: the embedding model (default: the bundled one)")
    bench.add_argument("--vs-server", default=None, metavar="URL",
                       help="Confab's server beside the OpenAI-compatible server at URL (e.g. llama-server), the same "
                            "client for both: 1 and 8 clients, agent-shaped prompts cold and with a known prefix")
    bench.add_argument("--vs-model", default=None, metavar="NAME",
                       help="with --vs-server: the model name to ask it for (default: the first it lists)")
    bench.add_argument("--prompt-tokens", default="1500,4000",
                       help="with --vs-server: comma-separated agent prompt lengths (tokens; default 1500,4000)")
    bench.add_argument("--vs-context", type=int, default=None, metavar="TOKENS",
                       help="with --vs-server: Confab's context a session (its shared pool holds four); default: the "
                            "longest prompt + --tokens + 512. Beside `llama-server -c 16384`, 4096 gives both 16,384 "
                            "cells: with fewer, Confab parks idle sessions that llama-server keeps")
    bench.add_argument("--rounds", type=int, default=3,
                       help="with --vs-server: each figure from both servers back to back this many times, the order "
                            "swapped each round; medians and every round's ratio are printed (default 3)")
    bench.add_argument("--agent-loop", action="store_true",
                       help="llama.cpp: a scripted 20-request agent loop (a sub-agent after 7) through serve's chat "
                            "API, prefix sharing on and off (wall_s, wall_ratio, identical)")
    bench.add_argument("--agents", action="store_true",
                       help="llama.cpp: 8 agent sessions with one long system prompt, prefix sharing on and off "
                            "(pool_ratio, warm_ttft_ratio, identical), then a restart on the same prompt cache "
                            "(restart_ttft_ratio, restart_identical)")
    bench.add_argument("--agent-prefix-tokens", type=int, default=3000,
                       help="with --agents: the shared system prompt's length (default 3000)")
    bench.add_argument("--agent-task-tokens", type=int, default=200,
                       help="with --agents: each session's own task (default 200)")

    from .server.cli import add_parser as add_serve_parser

    add_serve_parser(sub)

    pull = sub.add_parser("pull", help="download a model from Hugging Face (resumable) and print its path")
    pull.add_argument("spec", metavar="REPO[:FILE]", help="e.g. Qwen/Qwen2.5-0.5B-Instruct or ORG/NAME-GGUF:FILE.gguf")
    pull.add_argument("--max-context", type=int, default=4096, help="context the memory estimate assumes")

    from .cli.check import add_parser as add_check_parser

    add_check_parser(sub)

    args = parser.parse_args(argv)
    if args.command == "check":
        from .cli.check import run_check

        return run_check(args)
    if args.command == "serve":
        from .server.cli import run_serve

        return run_serve(args)
    if args.command == "pull":
        from .cli.pull import run_pull

        return run_pull(args)
    if args.command == "chat":
        from .cli.chat import run_chat

        return run_chat(args)
    from .bench.command import run_bench

    return run_bench(args)


def _backend_list(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n not in ("all", "auto", "torch", "mlx", "llamacpp")]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"unknown backend {', '.join(bad) or value!r}: use all, auto, torch, mlx, llamacpp")
    return names


if __name__ == "__main__":
    sys.exit(main())
