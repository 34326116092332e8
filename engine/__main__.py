"""Command line: `python -m engine chat` (interactive, streaming) and `python -m engine bench`."""

from __future__ import annotations

import argparse
import os
import sys

from .models import DEFAULT_MODEL


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    chat = sub.add_parser("chat", help="chat with a model in the terminal")
    chat.add_argument("--model", default=DEFAULT_MODEL, help="bundled:NAME, a model folder or a .gguf file")
    chat.add_argument("--backend", default="auto", choices=["auto", "torch", "mlx"])
    chat.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    chat.add_argument("--temperature", type=float, default=0.7)
    chat.add_argument("--max-tokens", type=int, default=512)
    chat.add_argument("--system", default=None, help="system prompt")

    bench = sub.add_parser("bench", help="measure load, prefill and decode speed against the plain library")
    bench.add_argument("--model", default=DEFAULT_MODEL)
    bench.add_argument("--backend", default="all", choices=["all", "auto", "torch", "mlx"],
                       help="all (the default) benches every installed backend, one after the other")
    bench.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    bench.add_argument("--sessions", default="1,2,4,8,16", help="comma-separated concurrent session counts")
    bench.add_argument("--tokens", type=int, default=64, help="tokens to generate per session")
    bench.add_argument("--long-context", type=int, default=4000,
                       help="context of the decode_ms_ctx4k figure (tokens; default 4000)")
    bench.add_argument("--json", action="store_true", help="print the figures as one JSON object")

    args = parser.parse_args(argv)
    if args.command == "chat":
        from .cli_chat import run_chat

        return run_chat(args)
    from .bench import run_bench

    return run_bench(args)


if __name__ == "__main__":
    sys.exit(main())
