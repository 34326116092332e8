"""Attachment chips count tokens as the model does where the engine can (no "~"), and the part that
fits is found with those counts; a remote engine, which cannot count, keeps the estimate with "~"."""

from __future__ import annotations

import pytest

from app.chat.context_meter import estimate_tokens
from engine import Engine, RemoteEngine
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)

JSON = "[\n" + "".join(f'  {{"id": {i}, "v": [{i}, 2, 3], "ok": true}},\n' for i in range(60)) + "]\n"


@pytest.fixture(autouse=True)
def _model_shown(window, gui_engine):
    window.set_model(gui_engine.model.name, gui_engine.backend, gui_engine.device, gui_engine.capacity,
                     gui_engine.max_context)


def _add(qtbot, window, path):
    tray = window.chat.files.tray
    tray.add_paths([path])
    qtbot.waitUntil(lambda: tray.drafts and tray.drafts[-1].chip.state != "reading", timeout=10_000)
    return tray.drafts[-1].chip


def test_a_local_model_counts_the_chip_exactly(qtbot, window, gui_engine, tmp_path):
    window.set_token_counter(gui_engine.count_tokens)
    path = tmp_path / "data.json"
    path.write_text(JSON[:600])
    chip = _add(qtbot, window, path)
    exact = gui_engine.count_tokens(JSON[:600])
    assert exact != estimate_tokens(JSON[:600])
    assert chip.state == "ready" and chip.label.text().endswith(f"· {exact:,} tokens") and "~" not in chip.label.text()
    assert f"{exact:,} tokens sent to the model" in chip.toolTip()
    meter = window.chat.context_meter
    assert meter.files == exact and meter.files_exact and f"with {exact:,} of the attached files" in meter.toolTip()


def test_json_the_estimate_would_let_through_is_too_big_and_its_first_part_fits(qtbot, window, gui_engine, tmp_path):
    window.set_token_counter(gui_engine.count_tokens)
    room = window.chat.files.room()
    text = JSON
    while estimate_tokens(text) < room * 0.9:
        text += JSON
    text = text[:int(room * 0.9 * 4)]  # the estimate says it fits
    assert estimate_tokens(text) <= room < gui_engine.count_tokens(text)
    path = tmp_path / "data.json"
    path.write_text(text)
    chip = _add(qtbot, window, path)
    assert chip.state == "too_big" and f"{gui_engine.count_tokens(text):,} tokens, {room:,} fit" in chip.label.text()
    chip.fit_button.click()
    qtbot.waitUntil(lambda: chip.state == "ready", timeout=10_000)
    (attachment,) = window.chat.files.tray.attachments()
    exact = gui_engine.count_tokens(attachment.text)
    assert attachment.truncated and exact <= room and text.startswith(attachment.text)
    assert attachment.text.endswith("\n") and f"(first part) · {exact:,} tokens" in chip.label.text()
    assert window.chat.context_meter.files == exact


def test_a_remote_engine_cannot_count_so_the_chip_shows_the_estimate(qtbot, window, tmp_path):
    assert Engine.counts_tokens and not RemoteEngine.counts_tokens  # what the app asks before it counts
    window.set_token_counter(None)
    path = tmp_path / "data.json"
    path.write_text(JSON[:600])
    chip = _add(qtbot, window, path)
    assert chip.label.text().endswith(f"· ~{estimate_tokens(JSON[:600]):,} tokens")
    assert "estimated" in chip.toolTip() and not window.chat.context_meter.files_exact


def test_a_file_past_the_context_says_which_part_was_counted(qtbot, window, gui_engine, tmp_path):
    window.set_token_counter(gui_engine.count_tokens)
    path = tmp_path / "big.json"
    path.write_text(JSON * 400)
    chip = _add(qtbot, window, path)
    assert chip.state == "too_big" and ": ~" in chip.label.text()
    assert "counted by the model, the rest estimated" in chip.toolTip()


def test_files_ready_when_a_model_loads_are_counted_again_by_it(qtbot, window, gui_engine, tmp_path):
    window.set_token_counter(None)
    path = tmp_path / "data.json"
    path.write_text(JSON[:600])
    chip = _add(qtbot, window, path)
    assert "· ~" in chip.label.text()
    window.set_token_counter(gui_engine.count_tokens)
    exact = gui_engine.count_tokens(JSON[:600])
    qtbot.waitUntil(lambda: chip.label.text().endswith(f"· {exact:,} tokens"), timeout=10_000)
    assert window.chat.context_meter.files == exact
    window.set_token_counter(None)  # e.g. connected to a server: back to the estimate
    assert chip.label.text().endswith(f"· ~{estimate_tokens(JSON[:600]):,} tokens")


def test_a_count_that_fails_leaves_the_estimate_not_a_refusal(qtbot, window, tmp_path):
    def broken(text: str) -> int:
        raise RuntimeError("the engine stopped")

    window.set_token_counter(broken)
    path = tmp_path / "data.json"
    path.write_text(JSON[:600])
    chip = _add(qtbot, window, path)
    assert chip.state == "ready" and chip.label.text().endswith(f"· ~{estimate_tokens(JSON[:600]):,} tokens")
