"""`python -m engine bench --speculative`: tok/s with and without drafted tokens (llama.cpp), each
pair measured in the same run, on the same engine, one request with drafts and one without, in turn.

- `edit_speedup`: one session asked to repeat a ~300-token code file with one identifier renamed
  (greedy), with drafts ÷ without (target >= 1.8 on the bundled model);
- `chat_speedup`: free chat, greedy, the same ratio (target >= 0.97: drafting must not slow it);
- `edit8_speedup`: 8 such conversations at once, aggregate tok/s with ÷ without;
- `acceptance`: drafted tokens the edit reply took ÷ tokens drafted;
- `same_text`: the greedy replies with and without drafts are identical (they must be);
- `step_ms_1`, `step_ms_13` and `ceiling`: one forward of 1 row and of 13 rows (every row's logits,
  as a round with 12 drafts asks) at a 300-token context, and 13 × the first ÷ the second: the
  speedup if every one of 12 drafts were taken, which no drafting can beat on this machine.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from ..drafts.model_cost import step_seconds
from ..engine import Engine
from ..types import EngineConfig, SamplingParams

CODE = '''import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Order:
    customer: str
    items: list
    discount: float = 0.0


def load_orders(path):
    """Read every order from a JSON file."""
    with open(path) as f:
        rows = json.load(f)
    return [Order(row["customer"], row["items"], row.get("discount", 0.0)) for row in rows]


def order_total(order, tax_rate):
    """Sum the order's items, take off the discount and add the tax."""
    subtotal = 0.0
    for item in order.items:
        subtotal += item["price"] * item["quantity"]
    subtotal -= subtotal * order.discount
    return round(subtotal * (1 + tax_rate), 2)


def best_customer(orders, tax_rate):
    """The customer who spent the most, and how much."""
    spent = {}
    for order in orders:
        spent[order.customer] = spent.get(order.customer, 0.0) + order_total(order, tax_rate)
    name = max(spent, key=spent.get)
    return name, spent[name]


def save_report(orders, tax_rate, path):
    name, amount = best_customer(orders, tax_rate)
    Path(path).write_text(f"{name} spent {amount:.2f}\\n")
'''
# Fenced, as editors and agents send code: unfenced, the bundled 135M model loses the file after four
# lines and rambles; fenced, it gives the file back (measured: its longest verbatim run 1 vs 162 chars).
EDIT = [{"role": "user", "content": "Rename the function `order_total` to `total_due` everywhere in this "
                                    "file and give me the whole file back, nothing else:\n\n```python\n" + CODE + "```"}]
CHAT = [{"role": "user", "content": "Write a short story about a lighthouse keeper who finds a message in a bottle."}]
SESSIONS = 8
EDIT_TOKENS = 400
"""Each reply's bound by default: the whole edited file (about 380 tokens with the bundled model's
opening sentence), so the figure is the edit's, not its first lines'."""


def speculative_figures(model: str, say: Callable[..., None], tokens: int = EDIT_TOKENS,
                        draft_model: Optional[str] = None) -> dict:
    """The figures above for `model` on llama.cpp (one engine; drafting chosen per request); every
    reply is at most `tokens` long (the edit reply ends sooner where the model ends the file). With
    `draft_model`, "with drafts" has that model's guesses as well as lookups."""
    config = EngineConfig(backend="llamacpp", max_context=2048, max_sessions=SESSIONS + 1, draft_model=draft_model)
    with Engine.load(model, config) as engine:
        edit = SamplingParams(temperature=0, max_tokens=tokens)
        chat = SamplingParams(temperature=0, max_tokens=tokens, ignore_stop=True)
        _one(engine, CHAT, SamplingParams(temperature=0, max_tokens=16))  # warm-up
        figures: dict = {"backend": "llamacpp", "model": model, "draft_model": engine.draft_model or None}
        pairs = {"edit": (EDIT, edit), "chat": (CHAT, chat)}
        for name, (messages, params) in pairs.items():
            on, off = _one(engine, messages, params), _one(engine, messages, _off(params))
            on2, off2 = _one(engine, messages, params), _one(engine, messages, _off(params))  # in turn, twice
            rate_on, rate_off = (on[1] + on2[1]) / 2, (off[1] + off2[1]) / 2
            figures[f"{name}_tok_s"] = round(rate_on, 1)
            figures[f"{name}_tok_s_without"] = round(rate_off, 1)
            figures[f"{name}_speedup"] = round(rate_on / rate_off, 2)
            figures[f"{name}_same_text"] = on[0] == off[0]
            figures[f"{name}_tokens"] = len(on[0])
            if name == "edit":
                figures["acceptance"] = round(on[3] / on[2], 3) if on[2] else 0.0
                figures["edit_drafted"], figures["edit_accepted"] = on[2], on[3]
            say(f"{name}: {rate_on:.1f} tok/s with drafts, {rate_off:.1f} without ({rate_on / rate_off:.2f}×)")
        together_on = _together(engine, edit)
        together_off = _together(engine, _off(edit))
        figures["edit8_tok_s"], figures["edit8_tok_s_without"] = round(together_on, 1), round(together_off, 1)
        figures["edit8_speedup"] = round(together_on / together_off, 2)
        say(f"8 edits at once: {together_on:.1f} tok/s with drafts, {together_off:.1f} without")
        figures["same_text"] = figures["edit_same_text"] and figures["chat_same_text"]
        one, thirteen = _step_seconds(engine, 13)
        figures["step_ms_1"], figures["step_ms_13"] = round(one * 1e3, 1), round(thirteen * 1e3, 1)
        figures["ceiling"] = round(13 * one / thirteen, 2)
        say(f"one forward: 1 row {one * 1e3:.1f} ms, 13 rows {thirteen * 1e3:.1f} ms "
            f"(at most {figures['ceiling']:.2f}× from drafts here)")
    return figures


def _step_seconds(engine: Engine, rows: int) -> tuple[float, float]:
    """`model_cost.step_seconds` (fastest of 7) on a scratch sequence after a 300-token prompt."""
    def run(worker) -> tuple[float, float]:
        backend = worker.backend
        seq = backend.new_state()
        try:
            with backend.compute():
                backend.step([(seq, list(range(100, 400)))])
                return step_seconds(backend, seq, rows, repeats=7)
        finally:
            backend.free_state(seq)

    return engine._call(run)


def _off(params: SamplingParams) -> SamplingParams:
    from dataclasses import replace

    return replace(params, speculative=False)


def _one(engine: Engine, messages: list[dict], params: SamplingParams) -> tuple[list[int], float, int, int]:
    """(token ids, decode tok/s, drafted, accepted) of one reply in a fresh session."""
    with engine.open_session() as s:
        chunks = list(s.chat(messages, params))
    stats = chunks[-1].stats
    return [t for c in chunks for t in c.token_ids], stats.decode_tok_s, stats.drafted_tokens, stats.accepted_tokens


def _together(engine: Engine, params: SamplingParams) -> float:
    """Aggregate tok/s of SESSIONS edit replies at once. Each session has read the prompt before
    (a one-token reply), so the timed run resumes warm and times decoding, not prefill."""
    sessions = [engine.open_session() for _ in range(SESSIONS)]
    try:
        for s in sessions:
            list(s.chat(EDIT, SamplingParams(temperature=0, max_tokens=1)))
        began = time.perf_counter()
        streams = [s.chat(EDIT, params) for s in sessions]
        n = sum(len(c.token_ids) for stream in streams for c in stream)
        return n / (time.perf_counter() - began)
    finally:
        for s in sessions:
            s.close()
