"""The plain library's speed on the bench's workloads: no engine, no sessions, no scheduler.

These are the ceilings the engine is compared with in the same run: transformers' `generate` or
mlx-lm's `stream_generate` for one sequence, and a bare greedy loop over one batched forward per step
for several (all rows the same length, so no padding, no mask and no merging: the cheapest batched
decode the library can do). The model is loaded a second time, on the calling thread.
"""

from __future__ import annotations

import math
import time
from typing import Callable

from ..engine import Engine

WARM_UP_STEPS = 3


class LibraryModel:
    """The engine's model loaded again straight through its library."""

    def __init__(self, engine: Engine) -> None:
        self.backend = engine.backend
        self.device = engine.device
        self.dtype = engine.dtype
        self.path = engine.model.path
        self.config = engine.model.config
        self.model, self.tokenizer = self._load()

    def _load(self):
        if self.backend == "mlx":
            import mlx.core as mx
            import mlx_lm

            from ..backends.mlx import _cast, _rope_compat

            model, tokenizer = mlx_lm.load(str(self.path), model_config=_rope_compat(self.config))
            _cast(model, getattr(mx, self.dtype), "quantization" in self.config)  # the engine's dtype
            return model, tokenizer
        import torch
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        model = AutoModelForCausalLM.from_pretrained(self.path, dtype=getattr(torch, self.dtype))
        return model.to(self.device).eval(), None

    def decode_tok_s(self, prompt: list[int], tokens: int) -> float:
        """One sequence through the library's own generation loop."""
        if self.backend == "mlx":
            import mlx_lm

            list(mlx_lm.stream_generate(self.model, self.tokenizer, prompt, max_tokens=2))  # warm-up
            last = None
            for last in mlx_lm.stream_generate(self.model, self.tokenizer, prompt, max_tokens=tokens):
                pass
            return last.generation_tps
        import torch

        ids = torch.tensor([prompt], device=self.device)

        def timed(n: int) -> float:
            started = time.perf_counter()
            with torch.inference_mode():
                self.model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
            return time.perf_counter() - started

        timed(2)  # warm-up
        one, full = timed(1), timed(tokens)
        return (tokens - 1) / (full - one)

    def batch_tok_s(self, prompt: list[int], rows: int, tokens: int) -> float:
        """Aggregate decode tok/s of `rows` copies of `prompt` stepped together, greedy."""
        step = self._mlx_loop(prompt, rows) if self.backend == "mlx" else self._torch_loop(prompt, rows)
        return rows * tokens / _timed(step, tokens)

    def linear_row_cost(self, rows: int = 8, repeats: int = 50) -> float:
        """Time of the model's largest linear layer (the output head aside) on `rows` rows ÷ on one.

        Batching multiplies the aggregate only where this is near 1, i.e. where a forward costs
        about the same for one row as for several (a GPU, a CPU with native bfloat16).
        NaN when the model has no plain linear layer (e.g. quantized MLX weights).
        """
        if self.backend == "mlx":
            import mlx.core as mx
            import mlx.nn as nn

            weight = _largest(m.weight for name, m in self.model.named_modules() if type(m) is nn.Linear
                              and "lm_head" not in name)
            if weight is None:
                return float("nan")
            inputs = {n: mx.ones((n, weight.shape[1]), dtype=weight.dtype) for n in (1, rows)}

            def run(n: int) -> None:
                mx.eval(inputs[n] @ weight.T)
        else:
            import torch

            weight = _largest(m.weight for name, m in self.model.named_modules()
                              if type(m) is torch.nn.Linear and "lm_head" not in name)
            if weight is None:
                return float("nan")
            inputs = {n: torch.ones((n, weight.shape[1]), dtype=weight.dtype, device=weight.device)
                      for n in (1, rows)}

            def run(n: int) -> None:
                with torch.inference_mode():
                    torch.nn.functional.linear(inputs[n], weight).sum().item()  # .item() waits for CUDA
        return _timed(lambda: run(rows), repeats) / _timed(lambda: run(1), repeats)

    def _torch_loop(self, prompt: list[int], rows: int) -> Callable[[], None]:
        import torch
        from transformers import DynamicCache

        model = self.model
        cache = DynamicCache(config=model.config)
        with torch.inference_mode():
            ids = torch.tensor([prompt] * rows, device=self.device)
            logits = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
        last = [logits[:, -1].argmax(-1, keepdim=True)]

        def step() -> None:
            with torch.inference_mode():
                out = model(input_ids=last[0], past_key_values=cache, use_cache=True, logits_to_keep=1)
                last[0] = out.logits[:, -1].argmax(-1, keepdim=True)
                last[0].cpu()  # the engine reads every step's tokens back too

        return step

    def _mlx_loop(self, prompt: list[int], rows: int) -> Callable[[], None]:
        import mlx.core as mx
        from mlx_lm.models.cache import make_prompt_cache

        model = self.model
        cache = make_prompt_cache(model)
        logits = model(mx.array([prompt] * rows), cache=cache)
        last = [mx.argmax(logits[:, -1:], axis=-1)]
        mx.eval(last[0])

        def step() -> None:
            out = model(last[0], cache=cache)
            last[0] = mx.argmax(out[:, -1:], axis=-1)
            mx.eval(last[0], [c.state for c in cache])

        return step


def _timed(fn: Callable[[], None], repeats: int) -> float:
    """Seconds `fn` takes `repeats` times, after a few calls to warm up."""
    for _ in range(WARM_UP_STEPS):
        fn()
    started = time.perf_counter()
    for _ in range(repeats):
        fn()
    return time.perf_counter() - started


def _largest(weights):
    """The weight with the most elements (the first of equals); None when there is none."""
    return max(weights, key=lambda w: math.prod(w.shape), default=None)
