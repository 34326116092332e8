"""Which model names a request may use: the served model's own names, aliases, or any name.

Agent clients (Claude Code, Codex) send their own model names ("claude-sonnet-4-5", "gpt-5-codex");
by default the server answers 404 naming the served id, so a wrong base URL is noticed. `serve
--model-alias NAME=TARGET` lets NAME stand for the served model, and `--any-model-name` accepts any.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from .. import Engine


@dataclass(frozen=True)
class ModelNames:
    """Names accepted beyond the served model's own (which are always accepted)."""

    aliases: tuple[str, ...] = field(default_factory=tuple)
    """Names that stand for the served model; listed in /v1/models after it."""
    any_name: bool = False
    """Accept whatever model name a client sends (the reply echoes it)."""

    def accepts(self, requested: str, engine: Engine) -> bool:
        return self.any_name or requested in self.aliases or requested in own_names(engine)


def own_names(engine: Engine) -> set[str]:
    """Names a request may use for the loaded model: its source, its folder name and the file stem."""
    source = engine.source
    names = {source, engine.model.name}
    if ":" in source and not Path(source).exists():
        names.add(source.split(":", 1)[1])
    else:
        names.add(Path(source).name)
        names.add(Path(source).stem)
    return names


def parse_alias(text: str) -> tuple[str, str]:
    """`NAME=TARGET` as (NAME, TARGET), for argparse: a bad one is a usage error (exit 2)."""
    name, sep, target = text.partition("=")
    name, target = name.strip(), target.strip()
    if not sep or not name or not target or "=" in target:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=TARGET (e.g. claude-sonnet-4-5=bundled:smollm2-135m-instruct; "
            "TARGET is the served model)")
    return name, target


def unknown_targets(aliases: list[tuple[str, str]], engine: Engine) -> list[str]:
    """The aliases whose TARGET is not a name of the loaded model, as NAME=TARGET."""
    names = own_names(engine)
    return [f"{name}={target}" for name, target in aliases if target not in names]
