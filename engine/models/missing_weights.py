"""Refuse a model folder whose safetensors lack tensors its architecture needs.

transformers fills a missing tensor with random numbers and only logs it: a folder holding a
config, a tokenizer and a safetensors without the weights (a download that stopped, the wrong
file) then "loads", and every reply is noise or fails later with a confusing message ("token ids
must be in [0, 100)"). The backend asks its loader which names it did not find (no second read of
the weights) and this turns them into one error that names them.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..errors import ModelLoadError

SHOWN = 5
"""Names listed in the message; the rest are counted."""


def check_complete(folder_name: str, missing: Iterable[str], unexpected: Iterable[str] = ()) -> None:
    """Raise ModelLoadError naming the `missing` tensors (and what the files hold instead) when
    there are any."""
    error = missing_weights_error(folder_name, missing, unexpected)
    if error is not None:
        raise error


def missing_weights_error(folder_name: str, missing: Iterable[str],
                          unexpected: Iterable[str] = ()) -> Optional[ModelLoadError]:
    """The refusal for a folder whose weights lack `missing` (None when nothing is missing)."""
    missing, unexpected = sorted(set(missing)), sorted(set(unexpected))
    if not missing:
        return None
    held = f"; they hold {_names(unexpected)} instead" if unexpected else ""
    return ModelLoadError(
        f"{folder_name} is missing weights: {len(missing)} tensor{'s' if len(missing) != 1 else ''} the "
        f"model needs {'are' if len(missing) != 1 else 'is'} not in its .safetensors files ({_names(missing)}){held}. "
        "The download may be incomplete or the wrong files: download the model again.")


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
