"""`python -m engine bench --vision`: images on llama.cpp, figures only (never asserted).

- `encode_s`: the vision projector's encoder on one 512×512 image; `ttft_s`: a fresh session's time
  to first token for that image and a question, and `ttft_text_s` for the question alone;
  `ttft_again_s`: the same request again in the same session (the image's prefix reused);
- `decode8_text_tok_s` / `decode8_two_images_tok_s`: aggregate decode of 8 sessions, all text, and
  of 8 of which 2 hold an image (read in an earlier turn), both groups open at once and measured in
  turns; `decode8_ratio` the median of each pair's ratio, images ÷ text (target >= 0.9).

Without `--model`, on random-weight SmolVLM-shaped models built here (engine/bench/vision_model.py):
the tiny one of the tests and one of SmolVLM-256M's shapes.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from ..engine import Engine
from ..errors import ImagesNotSupportedError
from ..images import image_part
from ..types import EngineConfig, SamplingParams
from .vision_model import SMOLVLM_256M, TINY, png, tiny_vision_model

QUESTION = "Describe this picture in a few words, please."
REPEATS = 3
PAIRS = 6


def vision_figures(model: Optional[str], say: Callable, tokens: int = 64) -> dict:
    """Figures per model: the given vision GGUF, else the tiny and the SmolVLM-256M-shaped random models."""
    if model is None:
        from ..models import resolve

        tokenizer = resolve("bundled:smollm2-135m-instruct").path
        models = {}
        for name, shape, outtype in (("tiny", TINY, "f32"), ("smolvlm-256m-shaped", SMOLVLM_256M, "f16")):
            say(f"building or reading the {name} random-weight vision model...")
            models[name] = tiny_vision_model(tokenizer, shape, outtype=outtype) / "model.gguf"
    else:
        models = {Path(model).name: Path(model)}
    return {name: _figures(path, say, tokens) for name, path in models.items()}


def _figures(path: Path, say: Callable, tokens: int) -> dict:
    with Engine.load(str(path), EngineConfig(backend="llamacpp", max_context=2048)) as engine:
        figures = _first_token(engine, path, say)
    plain, mixed = _decode8_pairs(path, tokens)
    figures["decode8_text_tok_s"] = round(statistics.median(plain), 2)
    figures["decode8_two_images_tok_s"] = round(statistics.median(mixed), 2)
    figures["decode8_ratio"] = round(statistics.median(m / p for m, p in zip(mixed, plain)), 3)
    say(f"8 sessions decoding: {figures['decode8_text_tok_s']:.1f} tok/s all text, "
        f"{figures['decode8_two_images_tok_s']:.1f} with 2 images (× {figures['decode8_ratio']:.2f})")
    return figures


def _first_token(engine: Engine, path: Path, say: Callable) -> dict:
    """Encode time and time to first token of one 512×512 image, fresh and again, and of text alone."""
    if not engine.takes_images:
        raise ImagesNotSupportedError(f"{path.name} cannot see images: {engine.images_reason}")
    _ttft(engine, _text(0))  # warm-up
    encode, ttft, again = [], [], []
    for i in range(REPEATS):
        with engine.open_session() as s:
            before = engine._vision.encode_seconds
            ttft.append(_ttft_in(s, _asking(png(512, 512, seed=i))))
            encode.append(engine._vision.encode_seconds - before)
            again.append(_ttft_in(s, _asking(png(512, 512, seed=i))))
    text = statistics.median(_ttft(engine, _text(0)) for _ in range(REPEATS))
    figures = {
        "model": path.name, "images": engine.images_reason,
        "image_tokens": sum(1 for t in engine.chat_tokens(_asking(png(512, 512))) if t < 0),
        "encode_s": round(statistics.median(encode), 4), "ttft_s": round(statistics.median(ttft), 4),
        "ttft_again_s": round(statistics.median(again), 4), "ttft_text_s": round(text, 4),
    }
    say(f"{path.name}: {figures['image_tokens']} image tokens; encode {figures['encode_s']:.3f} s, "
        f"TTFT {figures['ttft_s']:.3f} s (again {figures['ttft_again_s']:.3f} s, text alone {text:.3f} s)")
    return figures


def _asking(image: bytes) -> list[dict]:
    return [{"role": "user", "content": [image_part(image), {"type": "text", "text": QUESTION}]}]


def _text(i: int) -> list[dict]:
    return [{"role": "user", "content": f"{QUESTION} (number {i})"}]


def _ttft(engine: Engine, messages: list[dict]) -> float:
    with engine.open_session() as s:
        return _ttft_in(s, messages)


def _ttft_in(session, messages: list[dict]) -> float:
    return list(session.chat(messages, SamplingParams(temperature=0, max_tokens=1)))[-1].stats.ttft_s


def _decode8_pairs(path: Path, tokens: int) -> tuple[list[float], list[float]]:
    """Aggregate decode tok/s of 8 text sessions and of 8 of which 2 hold an image, in turns (A, B then
    B, A), PAIRS times. Each group has an engine of its own, loaded side by side and stepped one at a
    time: in one shared pool the group opened second sat above the first one's cells, and a session's
    decode walks the cells below its own (two groups of 8 text sessions measured 0.2-4.9× each other).
    Both groups read their questions (and images) first, so each turn is decode beside images, not
    their encoding, and the two figures of a pair are taken seconds apart."""
    config = EngineConfig(backend="llamacpp", max_context=2048)
    with Engine.load(str(path), config) as text_engine, Engine.load(str(path), config) as image_engine:
        groups = [_Group(text_engine, 0), _Group(image_engine, 2)]
        rates: tuple[list[float], list[float]] = ([], [])
        for i in range(PAIRS):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            for g in order:
                rates[g].append(groups[g].go_on(tokens))
        for group in groups:
            group.close()
    return rates


class _Group:
    """8 open conversations, the first `images` about an image; each turn asks them all to go on."""

    def __init__(self, engine: Engine, images: int) -> None:
        self.sessions = [engine.open_session() for _ in range(8)]
        self.asked = [_asking(png(512, 512, seed=10 + i)) if i < images else _text(i) for i in range(8)]
        for i, s in enumerate(self.sessions):
            self._answered(i, s.chat(self.asked[i], SamplingParams(temperature=0, max_tokens=1)).text())

    def _answered(self, i: int, text: str) -> None:
        self.asked[i] = self.asked[i] + [{"role": "assistant", "content": text}, {"role": "user", "content": "Go on."}]

    def go_on(self, tokens: int) -> float:
        """Aggregate tok/s while all 8 decode (from the last first token to the first finish)."""
        params = SamplingParams(temperature=0, max_tokens=tokens, ignore_stop=True, speculative=False)
        streams = [s.chat(self.asked[i], params) for i, s in enumerate(self.sessions)]
        arrivals: list[list[float]] = [[] for _ in streams]
        texts = [""] * len(streams)

        def drain(i: int) -> None:
            for chunk in streams[i]:
                texts[i] += chunk.text
                if chunk.prefill is None:
                    arrivals[i].append(time.perf_counter())

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(streams))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, text in enumerate(texts):
            self._answered(i, text)
        start, end = max(a[0] for a in arrivals), min(a[-1] for a in arrivals)
        return sum(1 for a in arrivals for t in a if start < t <= end) / (end - start)

    def close(self) -> None:
        for s in self.sessions:
            s.close()
