"""`python -m app [--model SOURCE] [--home FOLDER] [--self-test]`: Confab's desktop window.

The store opens on the store thread and the model loads on a thread of its own, so the window shows
at once ("Loading model…", composer disabled) and becomes usable when the engine is ready. Starting
Confab a second time brings the running window forward instead.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Optional

from engine import DEFAULT_MODEL, EngineConfig
from engine.cli.options import add_gpu_layers, add_kv_cache


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app", description="Confab: chat with a local model.")
    parser.add_argument("--model", default=None,
                        help=f"bundled:NAME, a model folder or a .gguf file (default: the last one used, else {DEFAULT_MODEL})")
    parser.add_argument("--backend", default="auto", choices=["auto", "torch", "mlx", "llamacpp"])
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    parser.add_argument("--draft-model", default=None, metavar="SOURCE",
                        help="llama.cpp: a small .gguf of the model's vocabulary that also guesses tokens for it to check")
    add_gpu_layers(parser)
    add_kv_cache(parser)
    parser.add_argument("--home", type=Path, default=None, help="data folder (default: $CONFAB_HOME or the user data dir)")
    parser.add_argument("--self-test", action="store_true",
                        help="start the real window on the bundled model in a temporary folder, chat, restart, check; exit 0 when all is well")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> int:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = EngineConfig(backend=args.backend, dtype=args.dtype, draft_model=args.draft_model, gpu_layers=args.gpu_layers,
                          cache_type_k=args.cache_type_k, cache_type_v=args.cache_type_v)
    if args.self_test:
        from app.devtools.self_test import run_self_test

        return run_self_test(args.model or DEFAULT_MODEL, config)

    from PySide6.QtWidgets import QApplication

    from app.application import ConfabApp
    from app.quick.single_instance import SingleInstance, instance_key
    from app.store import data_dir

    home = args.home if args.home is not None else data_dir()
    qapp = QApplication(sys.argv[:1])
    qapp.setApplicationName("Confab")
    qapp.setQuitOnLastWindowClosed(False)  # the tray may keep the app alive; quitting is explicit
    instance = SingleInstance(instance_key(home))
    if not instance.claim():
        print("Confab is already running; brought its window forward.")
        return 0
    confab = ConfabApp(qapp, home, config)
    instance.raise_requested.connect(confab.show_window)
    confab.window.closed.connect(confab.quit)
    confab.show_window()
    confab.load(args.model or confab.settings.last_model or DEFAULT_MODEL, fall_back=args.model is None)
    return qapp.exec()


if __name__ == "__main__":
    sys.exit(main())
