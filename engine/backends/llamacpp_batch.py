"""A step's tokens written into llama.cpp's batch: apart from the backend so that what each field
means (position, sequence, which rows give logits) reads in one place."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .llamacpp_library import Seq


def fill_batch(b, batch_size: int, items: list[tuple[Seq, list[int]]], rows: Optional[list[int]]) -> list[range]:
    """Write `items` (each sequence's new tokens, in order) into the `llama_batch` `b`: logits for each
    item's last token, or its last rows[i] tokens; the batch rows of each item's logits. ValueError
    when they do not fit."""
    n = sum(len(tokens) for _, tokens in items)
    if n > batch_size:
        raise ValueError(f"{n} tokens in one step; the batch holds {batch_size}")
    token = np.ctypeslib.as_array(b.token, shape=(batch_size,))
    pos = np.ctypeslib.as_array(b.pos, shape=(batch_size,))
    n_seq = np.ctypeslib.as_array(b.n_seq_id, shape=(batch_size,))
    wants = np.ctypeslib.as_array(b.logits, shape=(batch_size,))
    last: list[range] = []
    i = 0
    for item, (seq, tokens) in enumerate(items):
        k = len(tokens)
        want = rows[item] if rows is not None else 1
        token[i:i + k] = tokens
        at = seq.position()  # text: one position per token, which llama.cpp repeats into M-RoPE's sections
        pos[i:i + k] = np.arange(at, at + k)
        n_seq[i:i + k] = 1
        wants[i:i + k] = 0
        wants[i + k - want:i + k] = 1
        for j in range(i, i + k):
            b.seq_id[j][0] = seq.id
        i += k
        last.append(range(i - want, i))
    b.n_tokens = n
    return last
