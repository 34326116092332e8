"""Prompt-lookup drafts: guess a session's next tokens from its own context.

Code edits, refactors, quotes and agent loops repeat long stretches of what the context already
holds. When the last n tokens of a session's context (prompt and reply so far) occurred earlier, the
tokens that followed them then are a good guess for what follows now; the model checks the guess in
one forward (engine/drafts/speculative.py). The same idea as llama.cpp's n-gram lookup and
transformers' prompt-lookup decoding, written here because Confab drafts for many sessions inside
one joint round, not for one sequence.

The index is incremental: each token added costs a few dict updates, so a 4,000-token prompt is
indexed once per reply (a few milliseconds) and every later step costs microseconds.
"""

from __future__ import annotations

from typing import Sequence

MIN_NGRAM = 1
"""Shortest suffix looked up. One token matches often and wrongly; the session's acceptance rate
(engine/drafts/speculative.py) decides whether such drafts are worth their cost."""
MAX_NGRAM = 4
"""Longest suffix looked up: the longest match wins, so a long repeat is followed exactly."""


class LookupIndex:
    """Where each n-gram of a token list last occurred, for n in [MIN_NGRAM, MAX_NGRAM].

    `follow[n][gram]` is the position just after the last earlier occurrence of `gram` that has a
    token after it, so the current suffix never matches itself."""

    def __init__(self, tokens: Sequence[int] = ()) -> None:
        self.tokens: list[int] = []
        self.follow: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in range(MIN_NGRAM, MAX_NGRAM + 1)}
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            end = len(self.tokens)  # the n-grams ending just before this token are now followed by it
            for n, table in self.follow.items():
                if end >= n:
                    table[tuple(self.tokens[end - n:end])] = end
            self.tokens.append(token)

    def sync(self, tokens: Sequence[int]) -> None:
        """Index `tokens`, a reply's context that only grows (its last indexed token is checked)."""
        have = len(self.tokens)
        if len(tokens) >= have and (have == 0 or tokens[have - 1] == self.tokens[-1]):
            self.extend(tokens[have:])
        else:
            self.__init__(tokens)

    def propose(self, k: int) -> list[int]:
        """Up to `k` tokens that followed the longest earlier match of the current suffix; [] if none."""
        return self.match(k)[0]

    def match(self, k: int) -> tuple[list[int], int]:
        """`propose(k)` and the length of the match it followed (0: none), which says how likely the
        draft is to hold (engine/drafts/odds.py)."""
        if k <= 0:
            return [], 0
        tokens = self.tokens
        for n in range(min(MAX_NGRAM, len(tokens)), MIN_NGRAM - 1, -1):
            start = self.follow[n].get(tuple(tokens[len(tokens) - n:]))
            if start is not None:
                draft = tokens[start:start + k]
                cut = next((i for i, t in enumerate(draft) if t < 0), len(draft))  # an image's ids: never drafted
                return draft[:cut], n
        return [], 0
