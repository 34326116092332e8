"""The reference check: a backend's logits for one prompt prefilled in one call, in pieces of 1, 16,
32 and 128 tokens and (llama.cpp) as part of a joint batch with other sequences, compared with each
other and with a float32 torch forward of the same weights (a GGUF's tensors dequantized).

A kernel that computes wrong (llama.cpp's AMX path in 0.3.16 at ≥ 32 rows: off by 11.4) shows here on
any CPU; the tests run it on every backend and `python -m engine check` on the user's machine.

    rows = compare(backend, tokens, reference_logits(path, tokens))   # on the engine thread
    worst(rows, "vs_one_call"), worst(rows, "vs_reference")
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

PIECES = (1, 16, 32, 128)
PROMPT_TOKENS = 160
"""Long enough for two pieces of 128 and five of 32."""
JOINT_OTHERS = 3
PROMPT_TEXT = (
    "The lighthouse keeper climbed the stairs at dusk, counted the ships on the horizon, and wrote in her "
    "log that the sea was calm. Below, the village prepared for the winter market: bakers stacked bread "
    "in the square, fishermen mended nets by lamplight, and children chased each other between the stalls. "
    "Her brother sent a letter from the city, where he studied engineering and built small machines that "
    "measured the wind. He asked whether the old lens still turned smoothly, whether the foghorn had been "
    "repaired, and whether she would visit in the spring when the roads were open again. She answered that "
    "the lens turned as it always had, that the foghorn sang once more, and that she would come in April, "
    "bringing dried apples, a jar of honey and the logbook of the year, so that he could see how many ships "
    "had passed safely in the night while the light swept slowly over the dark water."
)


@dataclass(frozen=True)
class Row:
    """One way of prefilling the prompt and how far its logits are from the others'."""

    label: str
    """"one call", "pieces of 16", "joint with 3 others"."""
    vs_one_call: Optional[float]
    """Largest |logit difference| from the one-call prefill at the last position (None: it is that)."""
    vs_reference: Optional[float]
    """Largest |logit difference| from the float32 reference over every position this way computes
    logits for (the last of each piece); None without a reference."""


def prompt_tokens(tokenizer, n: int = PROMPT_TOKENS) -> list[int]:
    """`n` token ids of PROMPT_TEXT (repeated if the vocabulary makes it shorter)."""
    ids = list(tokenizer(PROMPT_TEXT, add_special_tokens=False).input_ids)
    return (ids * (n // max(len(ids), 1) + 1))[:n]


def prefill(backend, tokens: list[int], piece: int) -> dict[int, np.ndarray]:
    """{position: float32 logits} for the last position of each `piece`-token forward, on a
    scratch state that is freed after."""
    state = backend.new_state()
    out: dict[int, np.ndarray] = {}
    try:
        with backend.compute():
            for start in range(0, len(tokens), piece):
                chunk = tokens[start:start + piece]
                out[start + len(chunk) - 1] = np.asarray(backend.forward(state, chunk), dtype=np.float32)
    finally:
        _free(backend, state)
    return out


def joint(backend, tokens: list[int], others: int = JOINT_OTHERS) -> dict[int, np.ndarray]:
    """{last position: logits} of `tokens` prefilled in one `step` beside `others` other sequences
    (rotations of the same prompt, so the batch mixes different content)."""
    states = [backend.new_state() for _ in range(others + 1)]
    room = max(1, (backend._batch_size - len(tokens)) // max(others, 1))
    feeds = [list(tokens)] + [(tokens[7 * (i + 1):] + tokens[:7 * (i + 1)])[:room] for i in range(others)]
    try:
        with backend.compute():
            rows = backend.step(list(zip(states, feeds)))
    finally:
        for state in states:
            _free(backend, state)
    return {len(tokens) - 1: np.asarray(rows[0], dtype=np.float32)}


def compare(backend, tokens: list[int], reference: Optional[np.ndarray] = None,
            pieces: tuple[int, ...] = PIECES, others: int = JOINT_OTHERS) -> list[Row]:
    """Rows for one call, each piece size and (backends with `step`) a joint batch."""
    last = len(tokens) - 1
    whole = prefill(backend, tokens, len(tokens))
    ways = [("one call", whole)] + [(f"pieces of {p}", prefill(backend, tokens, p)) for p in pieces]
    if hasattr(backend, "step") and others:
        ways.append((f"joint with {others} others", joint(backend, tokens, others)))
    rows = []
    for label, got in ways:
        vs_ref = None if reference is None else max(float(np.max(np.abs(v - reference[pos]))) for pos, v in got.items())
        vs_one = None if got is whole else float(np.max(np.abs(got[last] - whole[last])))
        rows.append(Row(label, vs_one, vs_ref))
    return rows


def worst(rows: list[Row], field: str) -> float:
    """The largest figure of `field` ("vs_one_call" or "vs_reference") over the rows; 0.0 if none."""
    return max((getattr(r, field) for r in rows if getattr(r, field) is not None), default=0.0)


def reference_logits(weights: Path, config_folder: Path, tokens: list[int]) -> np.ndarray:
    """[len(tokens), vocab] float32 logits of a float32 transformers model holding `weights` (a
    .gguf, every tensor dequantized; or a safetensors folder), config from `config_folder`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from ..backends.torch_gguf import load_gguf_model

    config = AutoConfig.from_pretrained(config_folder)
    if Path(weights).suffix == ".gguf":
        model, _ = load_gguf_model(Path(weights), config, torch.float32, "cpu", want_int4=False)
    else:
        model = AutoModelForCausalLM.from_pretrained(weights, config=config, dtype=torch.float32, local_files_only=True)
    with torch.inference_mode():
        return model.eval()(input_ids=torch.tensor([tokens])).logits[0].float().numpy()


def _free(backend, state) -> None:
    free = getattr(backend, "free_state", None)  # llama.cpp's sequences live in a shared context
    if free is not None:
        free(state)


def reference_source(model) -> tuple[Path, Path]:
    """(weights, config folder) for `reference_logits` of a loaded engine's `model` (a ModelFolder):
    the GGUF file itself where it came from one, else the folder's safetensors."""
    from ..models.gguf_convert import gguf_source

    path = Path(model.path)
    if path.suffix == ".gguf":
        return path, Path(model.tokenizer_folder)
    return gguf_source(path) or path, path
