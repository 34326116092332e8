"""A draft model: a small model of the same vocabulary proposes each decoding session's next tokens.

Lookup drafts (lookup.py) cost nothing but only guess text the context already holds; a small model
of the same family (SmolLM2-135M for SmolLM2-1.7B, say) guesses free text too, for the price of its
own forwards. It runs on the engine thread in its own llama.cpp context: a second LlamaCppBackend,
so its conversations are sequences of one pool like the main model's. It keeps one sequence per
conversation with the tokens it has read, so each round it reads only what is new (a long prompt a
chunk per round, as the main model prefills: no round waits for it). Its guesses are greedy and
only guesses: the main model's sampler takes or rejects each (engine/drafts/speculative.py), so a
reply is the main model's whatever the draft proposes, and a draft that fails only costs time.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import llama_cpp as lc
import numpy as np

from ..errors import CapacityError, DraftModelError, DraftModelFileError, EngineError
from ..prefix_share import common_prefix
from .model_cost import RowCost

log = logging.getLogger(__name__)

MAX_VOCAB_DIFFERENCE = 128
"""A draft's vocabulary may be this many tokens longer or shorter than the main model's (padding),
as llama.cpp's server allows; every token both have must be the same text."""
MAX_TOKENS = 6
"""Most tokens the draft model guesses for one session in one round (each is one of its forwards)."""


class DraftModel:
    """A loaded draft model and the tokens each conversation's sequence in it holds."""

    def __init__(self, backend, name: str, vocab: int) -> None:
        self.backend = backend
        self.name = name
        self.vocab = vocab
        """Tokens both vocabularies have: a guess is taken from these only."""
        self.chunk = backend.config.prefill_chunk
        self._held: "OrderedDict[int, tuple[object, list[int]]]" = OrderedDict()
        """Session id -> (its sequence, the tokens it holds), least recently drafted first."""
        self.failed = False
        self.cost = RowCost()
        """Its forwards' seconds against the tokens they read (engine/drafts/model_cost.py weighs them)."""

    @classmethod
    def load(cls, path: Path, name: str, target, config) -> "DraftModel":
        """Load `path` beside `target` (the main model's LlamaCppBackend); DraftModelError, naming the
        first token that differs, when the vocabularies do not match."""
        from ..backends.llamacpp import LlamaCppBackend

        if Path(path).suffix.lower() != ".gguf":
            raise DraftModelFileError(f"the draft model must be a .gguf file (llama.cpp), not {Path(path).name}")
        # The same sessions as the main model, in a pool sized as the main model's default.
        backend = LlamaCppBackend("cpu" if target.device == "cpu" else "auto", "auto",
                                  dataclasses.replace(config, memory_budget=None, mmproj=""))
        try:
            backend.load(path, {})
        except EngineError as e:
            backend.close()
            raise DraftModelFileError(f"the draft model {name}: {e}") from None
        try:
            vocab = same_vocabulary(target.model, backend.model, name)
        except BaseException:
            backend.close()
            raise
        return cls(backend, name, vocab)

    def close(self) -> None:
        self._held.clear()
        self.backend.close()

    def forget(self, session_id: int) -> None:
        """A closed conversation's sequence goes."""
        entry = self._held.pop(session_id, None)
        if entry is not None:
            self.backend.free_state(entry[0])

    # -- guessing ----------------------------------------------------------------------------------
    def propose(self, wants: list[tuple[int, Sequence[int], int]]) -> dict[int, list[int]]:
        """Greedy guesses for `wants` ((session id, its whole context, tokens wanted)); a session
        whose context the draft has not read to the end yet reads up to a chunk more and guesses
        next round. Never raises: a failure clears the draft's sequences and guesses nothing."""
        if self.failed or not wants:
            return {}
        try:
            return self._propose(wants)
        except Exception:
            log.exception("the draft model %s failed; its sequences are cleared and it guesses again "
                          "from the next round", self.name)
            for sid in list(self._held):
                self.forget(sid)
            return {}

    def _propose(self, wants: list[tuple[int, Sequence[int], int]]) -> dict[int, list[int]]:
        keep = {sid for sid, _, _ in wants}
        entries = [(sid, context, k, self._entry(sid, context, keep)) for sid, context, k in wants]
        # the chunk's tokens go to the sessions with least to read first: those about to guess
        entries = sorted((e for e in entries if e[3] is not None), key=lambda e: len(e[1]) - len(e[3][1]))
        feeds: list[tuple[int, object, list[int], list[int], int]] = []  # sid, seq, held, new, wanted
        budget = self.chunk
        for sid, context, k, (seq, held) in entries:
            new = list(context[len(held):len(held) + budget])
            if not new:
                break
            budget -= len(new)
            feeds.append((sid, seq, held, new, k if len(held) + len(new) == len(context) else 0))
        if not feeds or not self._room(sum(len(f[3]) + f[4] for f in feeds), keep):
            return {}
        logits = self._step([(seq, new) for _, seq, _, new, _ in feeds])
        guesses: dict[int, list[int]] = {}
        for (sid, _, held, new, k), row in zip(feeds, logits):
            held.extend(new)
            if k:
                guesses[sid] = [int(np.argmax(row[:self.vocab]))]
        for _ in range(1, MAX_TOKENS):
            going = [f for f in feeds if f[0] in guesses and len(guesses[f[0]]) < f[4]]
            if not going:
                break
            rows = self._step([(seq, [guesses[sid][-1]]) for sid, seq, _, _, _ in going])
            for (sid, _, held, _, _), row in zip(going, rows):
                held.append(guesses[sid][-1])
                guesses[sid].append(int(np.argmax(row[:self.vocab])))
        return guesses

    def _step(self, items: list) -> list:
        began = time.perf_counter()
        out = self.backend.step(items)
        self.cost.observe(sum(len(tokens) for _, tokens in items), time.perf_counter() - began)
        return out

    def _entry(self, sid: int, context: Sequence[int], keep: set[int]):
        """The session's sequence, cut back to the longest prefix of `context` it holds (and never all
        of it: the last token is read again for its logits); None when no sequence is to be had."""
        entry = self._held.get(sid)
        if entry is None:
            seq = None
            while seq is None:
                try:
                    seq = self.backend.new_state()
                except CapacityError:
                    if not self._evict(keep):
                        return None
            entry = self._held[sid] = (seq, [])
        seq, held = entry
        same = common_prefix(held, context)
        same = min(same, len(context) - 1)
        if same < len(held):
            if not self.backend.trim(seq, len(held) - same):
                self.forget(sid)
                return self._entry(sid, context, keep)
            del held[same:]
        self._held.move_to_end(sid)
        return entry

    def _room(self, tokens: int, keep: set[int]) -> bool:
        """Whether the draft's pool has `tokens` free, after closing the sequences of conversations
        that drafted least recently (they read their context again when they next draft)."""
        pool = self.backend.pool
        while pool.tokens - self.backend.held_tokens() < tokens + 1:
            if not self._evict(keep):
                return False
        return True

    def _evict(self, keep: set[int]) -> bool:
        for sid in self._held:
            if sid not in keep:
                self.forget(sid)
                return True
        return False

    def describe(self) -> str:
        return f"{self.name} ({self.backend.quantized})"


def same_vocabulary(model, draft, name: str) -> int:
    """Tokens both vocabularies have (DraftModelError unless every one of them is the same text and
    the sizes differ by at most MAX_VOCAB_DIFFERENCE)."""
    mine, theirs = lc.llama_model_get_vocab(model), lc.llama_model_get_vocab(draft)
    n, m = int(lc.llama_vocab_n_tokens(mine)), int(lc.llama_vocab_n_tokens(theirs))
    if abs(n - m) > MAX_VOCAB_DIFFERENCE:
        raise DraftModelError(f"the draft model {name} has {m} tokens and the model {n}: a draft model "
                             "must have the same vocabulary (the same family's smaller model)")
    for token in range(min(n, m)):
        a, b = lc.llama_vocab_get_text(mine, token), lc.llama_vocab_get_text(theirs, token)
        if a != b:
            raise DraftModelError(
                f"the draft model {name} has another vocabulary: its token {token} is "
                f"{b.decode(errors='replace')!r}, the model's is {a.decode(errors='replace')!r}")
    return min(n, m)
