"""`python -m engine bench --repetition`: how often replies fall into a loop ("a leaf that brings a
leaf that brings a leaf…") under a few sampling settings, on the same prompts and seeds.

For each setting, every prompt of `repetition_prompts` is asked once as a chat turn (sampled
settings seeded by the prompt's index, so the figures repeat run to run), and the replies give:
- `loop_rate`: the share of replies in which some word 4-gram occurs `LOOP_COUNT` times or more;
- `repeated_4grams`: the share of all word 4-grams that repeat one earlier in the same reply;
- `run_on_rate`: the share of replies cut by max_tokens instead of ending (a penalty that punished
  the end token, or a loop, shows here);
- `mean_tokens`: the replies' mean length in tokens.
These figures chose the app's default sampling (app/settings/app_settings.py).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Callable

from ..engine import Engine
from ..types import EngineConfig, SamplingParams
from .repetition_prompts import PROMPTS

N = 4
LOOP_COUNT = 3
"""A 4-gram said three times in one short reply is a loop, not a turn of phrase."""
TOKENS = 256
SAMPLED = SamplingParams(temperature=0.7, max_tokens=TOKENS)
SETTINGS: dict[str, SamplingParams] = {
    "greedy": SamplingParams(temperature=0, max_tokens=TOKENS),
    "greedy, repeat 1.1": SamplingParams(temperature=0, max_tokens=TOKENS, repetition_penalty=1.1),
    "t0.7": SAMPLED,
    "t0.7, top-k 40, min-p 0.05": replace(SAMPLED, top_k=40, min_p=0.05),
    "t0.7, repeat 1.1": replace(SAMPLED, repetition_penalty=1.1),
    "t0.7, top-k 40, min-p 0.05, repeat 1.1": replace(SAMPLED, top_k=40, min_p=0.05, repetition_penalty=1.1),
    "t0.7, top-k 40, min-p 0.05, repeat 1.15": replace(SAMPLED, top_k=40, min_p=0.05, repetition_penalty=1.15),
    "t0.7, top-k 40, min-p 0.05, frequency 0.3": replace(SAMPLED, top_k=40, min_p=0.05, frequency_penalty=0.3),
}


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


def loop_figures(text: str) -> tuple[bool, int, int]:
    """(whether the text loops, 4-grams that repeat an earlier one, 4-grams in all)."""
    grams = [tuple(g) for g in zip(*(words(text)[i:] for i in range(N)))]
    counts: dict[tuple, int] = {}
    for gram in grams:
        counts[gram] = counts.get(gram, 0) + 1
    repeats = len(grams) - len(counts)
    return any(c >= LOOP_COUNT for c in counts.values()), repeats, len(grams)


def _ask(engine: Engine, prompt: str, params: SamplingParams) -> tuple[str, str, int]:
    with engine.open_session() as session:
        reply = session.chat([{"role": "user", "content": prompt}], params).reply()
    return reply.text, reply.finish_reason or "", reply.stats.generated_tokens if reply.stats else 0


def setting_figures(engine: Engine, params: SamplingParams, prompts: tuple[str, ...], workers: int) -> dict:
    """One setting's figures over `prompts` (each sampled reply seeded by its prompt's index)."""
    jobs = [replace(params, seed=i) if params.temperature > 0 else params for i in range(len(prompts))]
    with ThreadPoolExecutor(workers) as pool:
        replies = list(pool.map(lambda pair: _ask(engine, *pair), zip(prompts, jobs)))
    loops = repeats = grams = run_on = tokens = 0
    for text, finish, generated in replies:
        looped, r, g = loop_figures(text)
        loops, repeats, grams = loops + looped, repeats + r, grams + g
        run_on += finish == "length"
        tokens += generated
    n = len(replies)
    return {"loop_rate": round(loops / n, 3), "repeated_4grams": round(repeats / max(grams, 1), 3),
            "run_on_rate": round(run_on / n, 3), "mean_tokens": round(tokens / n, 1)}


def repetition_figures(model: str, say: Callable[..., None], backend: str = "auto", prompts: int = len(PROMPTS),
                       tokens: int = TOKENS, workers: int = 8) -> dict:
    """Every setting's figures on `model`, with what ran them."""
    asked = PROMPTS[:prompts]
    with Engine.load(model, EngineConfig(backend=backend, max_context=1024)) as engine:
        say(f"loaded {engine.model.name} on {engine.backend}/{engine.device}; {len(asked)} prompts, "
            f"{tokens} tokens at most each")
        figures: dict = {"model": engine.model.name, "backend": engine.backend, "prompts": len(asked),
                         "max_tokens": tokens, "settings": {}}
        for name, params in SETTINGS.items():
            params = replace(params, max_tokens=tokens)
            figures["settings"][name] = setting_figures(engine, params, asked, workers)
            say(f"{name}: {figures['settings'][name]}")
    return figures


def print_table(figures: dict) -> None:
    print(f"{figures['model']} on {figures['backend']}, {figures['prompts']} prompts, "
          f"≤ {figures['max_tokens']} tokens each")
    print(f"{'setting':44} {'loops':>6} {'rep 4g':>7} {'run on':>7} {'tokens':>7}")
    for name, f in figures["settings"].items():
        print(f"{name:44} {f['loop_rate']:6.0%} {f['repeated_4grams']:7.1%} {f['run_on_rate']:7.0%} "
              f"{f['mean_tokens']:7.1f}")
