"""Interactive terminal chat: one session, replies streamed as they are generated.

Commands: /reset starts over, /quit (or end of input) leaves. Ctrl+C during a reply stops it.
"""

from __future__ import annotations

import argparse
import sys

from .. import Engine, EngineConfig, SamplingParams
from ..errors import EngineError
from ..models import DEFAULT_MODEL
from ..remote import RemoteEngine


def run_chat(args: argparse.Namespace) -> int:
    def progress(fraction: float, message: str) -> None:
        print(f"\r[{fraction:4.0%}] {message[:70]:<70}", end="", file=sys.stderr, flush=True)

    try:
        if args.server:
            engine = RemoteEngine.connect(args.server, args.api_key, args.model)
            about = f"{engine.label} (remote)"
        else:
            engine = Engine.load(args.model or DEFAULT_MODEL, EngineConfig(backend=args.backend, dtype=args.dtype,
                                                                              gpu_layers=args.gpu_layers,
                                                                              cache_type_k=args.cache_type_k,
                                                                              cache_type_v=args.cache_type_v),
                                 progress=progress)
            about = (f"{engine.model.name} on {engine.backend}/{engine.device} ({engine.dtype}), "
                     f"weights {engine.capacity().weights_bytes / 2**20:.0f} MiB; {engine.backend_reason}")
    except EngineError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    print(f"\n{about}. /reset starts over, /quit leaves.", file=sys.stderr)
    params = SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens)
    messages: list[dict] = [{"role": "system", "content": args.system}] if args.system else []
    with engine, engine.open_session() as session:
        while True:
            try:
                line = input("> " if sys.stdin.isatty() else "")
            except (EOFError, KeyboardInterrupt):
                print(file=sys.stderr)
                return 0
            text = line.strip()
            if not text:
                continue
            if text == "/quit":
                return 0
            if text == "/reset":
                session.reset()
                del messages[1 if args.system else 0:]
                print("(conversation cleared)", file=sys.stderr)
                continue
            messages.append({"role": "user", "content": text})
            try:
                reply, last = _stream_reply(session, messages, params)
            except EngineError as e:  # e.g. the server went away: say so, keep the conversation
                print(f"\nerror: {e}", file=sys.stderr)
                messages.pop()
                continue
            messages.append({"role": "assistant", "content": reply})
            if last is not None and last.stats is not None:
                s = last.stats
                note = "" if last.finish_reason == "stop" else f", {last.finish_reason}"
                print(
                    f"  [{s.generated_tokens} tokens, {s.decode_tok_s:.1f} tok/s, first token {s.ttft_s:.2f} s{note}]",
                    file=sys.stderr,
                )


def _stream_reply(session, messages, params):
    parts, last = [], None
    stream = session.chat(messages, params)
    try:
        for chunk in stream:
            if chunk.reasoning:  # a thinking model's reasoning: on stderr, so stdout is the answer
                print(chunk.reasoning, end="", file=sys.stderr, flush=True)
            print(chunk.text, end="", flush=True)
            parts.append(chunk.text)
            last = chunk
    except KeyboardInterrupt:
        session.cancel()
        for chunk in stream:  # the engine stops at the next token; keep what it produced
            parts.append(chunk.text)
            last = chunk
    print()
    return "".join(parts), last
