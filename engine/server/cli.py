"""`python -m engine serve`: load a model and serve it over the OpenAI API until Ctrl+C."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from .. import Engine, EngineConfig
from ..cli.options import add_gpu_layers, add_kv_cache, add_prefix_cache
from ..embeddings import DEFAULT_EMBEDDING_MODEL, Embedder
from ..errors import EngineError, ModelLoadError
from ..models import DEFAULT_MODEL
from .model_names import ModelNames, parse_alias, unknown_targets
from .runner import DEFAULT_PORT, LOOPBACK, UnsafeBindError, bound_port, check_bind, make_server


def add_parser(sub) -> None:
    serve = sub.add_parser("serve", help="serve a model over an OpenAI-compatible HTTP API")
    serve.add_argument("--model", default=DEFAULT_MODEL, help="bundled:NAME, a model folder or a .gguf file")
    serve.add_argument("--host", default=LOOPBACK, help=f"address to bind (default {LOOPBACK}; any other "
                                                       "address needs --api-key)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    serve.add_argument("--api-key", action="append", default=[], metavar="KEY",
                       help="require 'Authorization: Bearer KEY' on every /v1 request; repeat for one key per "
                            "client (each key sees only its own sessions)")
    serve.add_argument("--cors", action="append", default=[], metavar="ORIGIN",
                       help="allow browser requests from ORIGIN (repeatable); none by default")
    serve.add_argument("--backend", default="auto", choices=["auto", "torch", "mlx", "llamacpp"])
    serve.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    serve.add_argument("--context", "--max-context", dest="max_context", type=context_size, default=4096,
                       metavar="TOKENS|max",
                       help="most tokens one session holds (default 4096); 'max': as long as the model was "
                            "trained for (an agent's system prompt and tools often need 16k-32k). The memory each "
                            "session may take is printed at start")
    serve.add_argument("--max-sessions", type=int, default=None,
                       help="most sessions at once (default: what the memory budget holds)")
    serve.add_argument("--no-speculative", dest="speculative", action="store_false",
                       help="llama.cpp: never draft tokens (on by default; a request's \"speculative\": false "
                            "turns it off for that request)")
    serve.add_argument("--draft-model", default=None, metavar="SOURCE",
                       help="llama.cpp: a small .gguf of the same vocabulary that also guesses tokens for the "
                            "model to check (e.g. the 135M of a 1.7B's family)")
    serve.add_argument("--model-alias", action="append", default=[], type=parse_alias, metavar="NAME=TARGET",
                       help="accept model NAME as the served model TARGET (repeatable), for clients that send "
                            "their own model names (e.g. claude-sonnet-4-5=bundled:smollm2-135m-instruct); "
                            "/v1/models lists each alias after the served model")
    serve.add_argument("--any-model-name", action="store_true",
                       help="accept whatever model name a client sends (by default another name gets 404 "
                            "naming the served model); replies echo the name asked for")
    serve.add_argument("--embedding-model", default=DEFAULT_EMBEDDING_MODEL, metavar="SOURCE",
                       help=f"the model /v1/embeddings serves, loaded on its first request (default {DEFAULT_EMBEDDING_MODEL}; "
                            "a sentence-embedding folder or .gguf; none: no embeddings)")
    add_gpu_layers(serve)
    add_kv_cache(serve)
    add_prefix_cache(serve, str(prefix_cache_dir()))
    serve.add_argument("--bench", action="store_true", help="measure HTTP vs in-process serving and exit")
    serve.add_argument("--json", action="store_true", help="with --bench: print the figures as one JSON object")


def prefix_cache_dir():
    """Where `serve` keeps prompts' K/V by default: beside converted models, in the user cache folder."""
    from ..models import cache_dir

    return cache_dir() / "prefix-cache"


def context_size(text: str):
    """--context's value: a number of tokens (at least 16), or "max" for the model's trained length."""
    if text.strip().lower() == "max":
        return "max"
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number of tokens nor 'max'") from None
    if value < 16:
        raise argparse.ArgumentTypeError(f"a context of {value} tokens is too small (at least 16)")
    return value


def _context_for(model: str, asked) -> int:
    """--context as a number: 'max' becomes the model's trained length, read from its header."""
    if asked != "max":
        return asked
    from ..models.estimate import trained_context

    limit = trained_context(model)
    if limit is None:
        raise EngineError(f"{model} does not say how long a context it was trained for: give --context TOKENS")
    return limit


def run_serve(args: argparse.Namespace) -> int:
    if args.bench:
        from .bench.run import run_bench

        return run_bench(args)
    from .app import ServerSettings
    from .host import EngineHost

    keys = [k for k in args.api_key if k]
    settings = ServerSettings(api_key=keys[0] if keys else None, api_keys=tuple(keys[1:]),
                              cors_origins=tuple(args.cors),
                              model_names=ModelNames(tuple(name for name, _ in args.model_alias),
                                                     args.any_model_name))
    try:
        check_bind(args.host, settings.api_key)
    except UnsafeBindError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:  # before the chat model loads: a wrong path is said at once (its weights load on first use)
        embedder = embedding_model(args.embedding_model)
    except EngineError as e:
        print(f"error: --embedding-model: {e}", file=sys.stderr)
        return 2
    print(f"loading {args.model} …", file=sys.stderr, flush=True)
    try:
        config = EngineConfig(backend=args.backend, dtype=args.dtype,
                              max_context=_context_for(args.model, args.max_context),
                              max_sessions=args.max_sessions, speculative=getattr(args, "speculative", True),
                              draft_model=args.draft_model, gpu_layers=getattr(args, "gpu_layers", None),
                              cache_type_k=args.cache_type_k, cache_type_v=args.cache_type_v,
                              prefix_cache_dir=getattr(args, "prefix_cache_dir", None),
                              prefix_cache_bytes=getattr(args, "prefix_cache_size", 0))
        engine = Engine.load(args.model, config)
    except EngineError as e:
        if embedder is not None:
            embedder.close()
        print(f"error: {e}", file=sys.stderr)
        return 1
    wrong = unknown_targets(args.model_alias, engine)
    if wrong:
        engine.close()
        if embedder is not None:
            embedder.close()
        print(f"error: --model-alias {', '.join(wrong)}: TARGET must name the served model, {engine.source!r}",
              file=sys.stderr)
        return 2
    host = EngineHost(engine, embedder=embedder)
    server = make_server(host, settings, args.host, args.port)
    _announce_when_started(server, args, engine, embedder)
    try:
        server.run()  # returns after Ctrl+C (or SIGTERM): replies cancelled, connections closed
    except KeyboardInterrupt:  # uvicorn re-raises the captured Ctrl+C once it has shut down
        pass
    finally:
        host.close()  # sessions freed
        engine.close()
        if embedder is not None:
            embedder.close()
    print("stopped", file=sys.stderr, flush=True)
    return 0


def embedding_model(source: Optional[str]) -> Optional[Embedder]:
    """The embedder to serve (its weights load on first use), or None for "none". The default one,
    when its package is not installed, is left out with a note; one the user named must be there."""
    if not source or source.lower() == "none":
        return None
    try:
        return Embedder(source)
    except ModelLoadError as e:
        if source != DEFAULT_EMBEDDING_MODEL:
            raise
        print(f"note: no embeddings served: {e}", file=sys.stderr, flush=True)
        return None


def _announce_when_started(server, args: argparse.Namespace, engine: Engine, embedder: Optional[Embedder]) -> None:
    """Print the URL once uvicorn listens (with --port 0 only then is the port known)."""
    original = server.startup

    async def startup(sockets=None):
        await original(sockets)
        if server.started:
            shown = f"[{args.host}]" if ":" in args.host else args.host
            url = f"http://{shown}:{bound_port(server)}/v1"
            on = f" · {engine.placement}" if engine.placement else ""
            print(f"serving {engine.source} ({engine.model.name}, {engine.backend} {engine.device}{on} {engine.dtype}) "
                  f"at {url}", flush=True)
            if engine.draft_model:
                print(f"drafting with {engine.draft_model}", flush=True)
            print(context_line(engine), flush=True)
            print(f"prompt cache {engine.prefix_cache_reason}", flush=True)
            if embedder is not None:
                print(f"embeddings: {embedder.source} ({embedder.dimensions} dimensions, loaded on first use)",
                      flush=True)
            print("Ctrl+C stops the server", file=sys.stderr, flush=True)

    server.startup = startup


def context_line(engine: Engine) -> str:
    """What the context costs, said at start: "context 8,192 tokens a session · 180 MiB each at full
    length · 12 sessions at once (pool of 49,152 tokens)"."""
    cap = engine.capacity()
    pool = f" (a shared pool of {cap.pool_tokens:,} tokens)" if cap.pool_tokens else ""
    return (f"context {engine.max_context:,} tokens a session · {cap.bytes_per_session / 2**20:,.0f} MiB "
            f"each at full length · up to {cap.max_sessions} sessions at once{pool}")
