"""The sampling values a user can set, described once for both dialogs that edit them (Settings for
the app's defaults, a conversation's settings for its overrides): label, tooltip, range and how a
value reads.

    for field in FIELDS:
        spin = field.spin()            # a QSpinBox or QDoubleSpinBox that cannot hold a bad value
        spin.setValue(getattr(settings, field.key))
        field.value(spin)              # the value to store (floats rounded to the shown decimals)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from PySide6.QtWidgets import QDoubleSpinBox, QSpinBox

from app.settings.app_settings import (MAX_TOKENS_RANGE, MIN_P_RANGE, PENALTY_RANGE, REPEAT_LAST_N_RANGE,
                                       REPEAT_PENALTY_RANGE, TEMPERATURE_RANGE, TOP_K_RANGE, TOP_P_RANGE)

SpinBox = Union[QSpinBox, QDoubleSpinBox]


@dataclass(frozen=True)
class Field:
    """One sampling value as the dialogs show it."""

    key: str
    """The AppSettings field and the conversation's sampling key (SamplingParams' name)."""
    label: str
    """Form label, with its Alt+letter."""
    name: str
    """Accessible name (and the words "Use default …" uses)."""
    tip: str
    low: float
    high: float
    step: float = 0.05
    decimals: int = 2
    """0: a whole number (QSpinBox)."""
    special: str = ""
    """Text shown at the lowest value, where that value means something of its own ("Off", "All")."""

    def spin(self) -> SpinBox:
        if self.decimals == 0:
            spin: SpinBox = QSpinBox()
            spin.setRange(int(self.low), int(self.high))
            spin.setSingleStep(int(self.step))
            spin.setGroupSeparatorShown(True)
        else:
            spin = QDoubleSpinBox()
            spin.setRange(self.low, self.high)
            spin.setDecimals(self.decimals)
            spin.setSingleStep(self.step)
        if self.special:
            spin.setSpecialValueText(self.special)
        spin.setAccessibleName(self.name)
        spin.setToolTip(self.tip)
        return spin

    def value(self, spin: SpinBox) -> Union[int, float]:
        return spin.value() if self.decimals == 0 else round(spin.value(), self.decimals)

    def shown(self, value: Union[int, float]) -> str:
        """`value` as its spin box reads it ("off" where the lowest value turns it off)."""
        if self.special and value == self.low:
            return self.special.lower()
        return f"{value:,}" if self.decimals == 0 else f"{value:g}"


FIELDS: tuple[Field, ...] = (
    Field("temperature", "T&emperature:", "Temperature", "0 always picks the likeliest word; higher is more varied",
          *TEMPERATURE_RANGE),
    Field("top_p", "Top-&p:", "Top-p", "Sample only from the likeliest words that together make up this share",
          *TOP_P_RANGE),
    Field("top_k", "Top-&k:", "Top-k", "Sample only from this many of the likeliest words (Off: no limit)",
          *TOP_K_RANGE, step=5, decimals=0, special="Off"),
    Field("min_p", "M&in-p:", "Min-p", "Leave out words less likely than this share of the likeliest one (Off: keep all)",
          *MIN_P_RANGE, step=0.01, special="Off"),
    Field("repetition_penalty", "Repeat pe&nalty:", "Repeat penalty",
          "Make words already in the last tokens of the conversation less likely, against replies that loop "
          "(1: off)", *REPEAT_PENALTY_RANGE, step=0.05),
    Field("repeat_last_n", "Repeat &window:", "Repeat window",
          "How many of the conversation's last tokens the penalties look at (All: the whole conversation; 0: off)",
          *REPEAT_LAST_N_RANGE, step=16, decimals=0, special="All"),
    Field("presence_penalty", "Presence penalt&y:", "Presence penalty",
          "Lower every word already in the window by this much, once (negative: favour them; 0: off)",
          *PENALTY_RANGE, step=0.1),
    Field("frequency_penalty", "Fre&quency penalty:", "Frequency penalty",
          "Lower each word by this much for every time it is in the window (negative: favour them; 0: off)",
          *PENALTY_RANGE, step=0.1),
    Field("max_tokens", "&Max tokens:", "Max tokens", "Longest reply, in tokens", *MAX_TOKENS_RANGE,
          step=1, decimals=0),
)
BY_KEY = {field.key: field for field in FIELDS}
