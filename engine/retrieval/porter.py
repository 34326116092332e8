"""The Porter stemmer (M. F. Porter, 1980, as in his reference implementation), so the engine's BM25
reads words as the app's word index does: SQLite FTS5's `porter` tokenizer, which the library's
table uses, is this algorithm. "dictionaries" and "dictionary" both become "dictionari",
"iterating", "iterator" and "iterates" become "iter".

Words of ASCII letters and digits, 3 to 64 characters long, are stemmed (digits count as consonants,
as in FTS5); shorter, longer or non-ASCII words are left as they are.
"""

from __future__ import annotations

import functools

_VOWELS = frozenset("aeiou")


def _consonant(w: str, i: int) -> bool:
    if w[i] in _VOWELS:
        return False
    if w[i] == "y":
        return i == 0 or not _consonant(w, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]: how many vowel-consonant sequences `stem` has."""
    m, i, n = 0, 0, len(stem)
    while i < n and _consonant(stem, i):
        i += 1
    while i < n:
        while i < n and not _consonant(stem, i):
            i += 1
        if i >= n:
            break
        while i < n and _consonant(stem, i):
            i += 1
        m += 1
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _double_consonant(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _consonant(w, len(w) - 1)


def _cvc(w: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (hop → hope, not hoop)."""
    n = len(w)
    return (n >= 3 and _consonant(w, n - 1) and not _consonant(w, n - 2) and _consonant(w, n - 3)
            and w[-1] not in "wxy")


def _replace(w: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    """The first rule whose suffix ends `w` decides: replaced when the stem's measure > min_m."""
    for suffix, by in rules:
        if w.endswith(suffix):
            stem = w[:len(w) - len(suffix)]
            return stem + by if _measure(stem) > min_m else w
    return w


_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
          ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
          ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
          ("ness", ""))
_STEP4 = tuple(sorted(("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
                       "ism", "ate", "iti", "ous", "ive", "ize"), key=len, reverse=True))
"""Longest first: "ement" is tried before "ment" and "ent", as the reference tries them."""


def _step1(w: str) -> str:
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        return w[:-1] if _measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[:-len(suffix)]):
            w = w[:-len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"
            if _double_consonant(w) and w[-1] not in "lsz":
                return w[:-1]
            if _measure(w) == 1 and _cvc(w):
                return w + "e"
            return w
    return w


def _step4(w: str) -> str:
    for suffix in _STEP4:
        if w.endswith(suffix):
            stem = w[:len(w) - len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return w
            return stem if _measure(stem) > 1 else w
    return w


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a lower-case word (unchanged when it is short, long or not plain ASCII)."""
    if not 3 <= len(word) <= 64 or not (word.isascii() and word.isalnum()):
        return word
    w = _step1(word)
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    w = _step4(w)
    if w.endswith("e"):
        m = _measure(w[:-1])
        if m > 1 or (m == 1 and not _cvc(w[:-1])):
            w = w[:-1]
    if _measure(w) > 1 and _double_consonant(w) and w.endswith("l"):
        w = w[:-1]
    return w
