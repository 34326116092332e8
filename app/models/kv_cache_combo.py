"""The Load-model dialog's K/V cache choice: how a llama.cpp model caches keys and values, in words a
user weighs (memory against speed), each entry a (keys, values) pair of llama.cpp cache types.

    combo = KvCacheCombo()
    combo.set_types("q8_0", "f16")
    combo.types()        # ("q8_0", "f16")

The order and the words follow the measurement in engine/kv_cache_type.py: 8-bit keys cost no speed,
8-bit values slow long prompts on the CPU.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QComboBox, QWidget

from engine import KV_CACHE_TYPES

CHOICES: tuple[tuple[str, str, str], ...] = (
    ("f16", "f16", "Full (f16)"),
    ("q8_0", "f16", "8-bit keys: ¾ of the memory, same speed"),
    ("q8_0", "q8_0", "8-bit keys and values: ½ the memory, long prompts slower"),
    ("q4_0", "q4_0", "4-bit keys and values: ⅓ of the memory, less exact"),
)


def kv_share(k: str, v: str) -> float:
    """The memory a (keys, values) cache takes, as a share of the f16 one's."""
    return (KV_CACHE_TYPES[k] + KV_CACHE_TYPES[v]) / (2 * KV_CACHE_TYPES["f16"])


class KvCacheCombo(QComboBox):
    """One entry per (keys, values) pair; a pair set from elsewhere (the command line) is added."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("K/V cache")
        self.setToolTip("llama.cpp (GGUF) models: the type each conversation's keys and values are kept in; "
                        "smaller types fit longer conversations in the same memory (the estimate above "
                        "follows). Other models keep their own type.")
        for k, v, words in CHOICES:
            self.addItem(words, f"{k}/{v}")  # a string: Qt hands a tuple back as a list

    def index_of(self, k: str, v: str) -> int:
        """The entry of (keys, values); -1 when there is none."""
        return self.findData(f"{k}/{v}")

    def set_types(self, k: Optional[str], v: Optional[str]) -> None:
        k, v = k or "f16", v or "f16"
        if self.index_of(k, v) < 0:
            self.addItem(f"keys {k}, values {v}", f"{k}/{v}")
        self.setCurrentIndex(self.index_of(k, v))

    def types(self) -> tuple[str, str]:
        k, _, v = (self.currentData() or "f16/f16").partition("/")
        return k, v
