"""App settings persist, survive a damaged file, and merge with a conversation's own sampling."""

from __future__ import annotations

import inspect
from dataclasses import fields, replace

import pytest

from app.settings.app_settings import AppSettings, load_settings, sampling_params, save_settings, settings_path

EDITED = AppSettings(theme="dark", font_size=14, temperature=0.3, top_p=0.9, max_tokens=2048,
                     state_budget_mb=512, prefix_cache_mb=0, close_to_tray=True, menubar_only=True, last_model="/models/a, b/q.gguf")


def test_missing_file_gives_defaults(tmp_path):
    assert load_settings(tmp_path / "nowhere") == AppSettings()


def test_round_trip(tmp_path):
    save_settings(tmp_path, EDITED)
    assert settings_path(tmp_path).is_file()
    assert load_settings(tmp_path) == EDITED


def test_every_field_is_documented():
    source = inspect.getsource(AppSettings)
    for f in fields(AppSettings):
        line = next(x for x in source.splitlines() if x.strip().startswith(f"{f.name}:"))
        after = source.split(line, 1)[1].lstrip()
        assert after.startswith('"""'), f"{f.name} has no docstring"


def test_binary_garbage_file_gives_defaults(tmp_path):
    settings_path(tmp_path).write_bytes(bytes(range(256)) * 8)
    assert load_settings(tmp_path) == AppSettings()


def test_bad_values_fall_back_per_field(tmp_path):
    settings_path(tmp_path).write_text(
        "[General]\n"
        "theme=purple\n"
        "font_size=200\n"
        "temperature=hot\n"
        "top_p=0.5\n"
        "max_tokens=12.5\n"
        "state_budget_mb=nan\n"
        "close_to_tray=maybe\n"
        "menubar_only=true\n"
        "last_model=/models/x\n"
        "[broken\n"
        "=== nonsense\n"
    )
    assert load_settings(tmp_path) == replace(AppSettings(), top_p=0.5, menubar_only=True, last_model="/models/x")


def test_save_replaces_previous_values(tmp_path):
    save_settings(tmp_path, EDITED)
    save_settings(tmp_path, replace(EDITED, theme="light", close_to_tray=False))
    loaded = load_settings(tmp_path)
    assert (loaded.theme, loaded.close_to_tray, loaded.font_size) == ("light", False, 14)


DEFAULTS = AppSettings(temperature=0.6, top_p=0.95, max_tokens=300)


@pytest.mark.parametrize(
    "conversation, expected",
    [
        ({}, (0.6, 0.95, 300)),
        ({"temperature": 0.0}, (0.0, 0.95, 300)),
        ({"top_p": 0.5, "max_tokens": 64}, (0.6, 0.5, 64)),
        ({"temperature": 1.2, "top_p": 0.8, "max_tokens": 1000}, (1.2, 0.8, 1000)),
        ({"temperature": "warm", "top_p": 7, "max_tokens": -3}, (0.6, 0.95, 300)),  # bad values: defaults
        ({"seed": 5, "temperature": None}, (0.6, 0.95, 300)),  # unknown keys and None are ignored
    ],
)
def test_sampling_params_merge(conversation, expected):
    p = sampling_params(conversation, DEFAULTS)
    assert (p.temperature, p.top_p, p.max_tokens) == expected
    p.validate()


def test_menubar_only_is_a_no_op_off_macos(monkeypatch):
    import sys

    from app.quick.macos import set_menubar_only

    monkeypatch.setattr(sys, "platform", "linux")
    assert set_menubar_only(True) is False


def test_the_drafting_setting_reaches_every_reply_and_survives_a_restart(tmp_path):
    assert AppSettings().speculative and sampling_params({}, AppSettings()).speculative
    save_settings(tmp_path, AppSettings(speculative=False))
    off = load_settings(tmp_path)
    assert off.speculative is False
    assert sampling_params({"temperature": 0.2}, off).speculative is False
