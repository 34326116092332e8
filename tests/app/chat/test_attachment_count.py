"""Token counts of files to attach: the model's own where the engine counts, the estimate (marked
"~") where it cannot, and a first part that really fits in the room left."""

from __future__ import annotations

import pytest

from app.chat import attachment_count
from app.chat.attachment_count import count_read, fit_part
from app.chat.attachment_reader import read_file
from app.chat.context_meter import estimate_tokens
from tests.app.gui_fixtures import gui_engine  # noqa: F401 (fixture)

CODE = "".join(f"def f{i}(a: int, b: int) -> int:\n    return a * {i} + b  # {{x: [{i}, 2]}}\n" for i in range(400))
CSV = "id,name,price,qty\n" + "".join(f"{i},item-{i},{i * 0.37:.2f},{i % 13}\n" for i in range(2000))
JSON = "[\n" + "".join(f'  {{"id": {i}, "tags": ["a{i}", "b"], "price": {i}.5, "ok": true}},\n' for i in range(800)) + "]\n"
PROSE = "".join(f"Line {i}: the council met and talked about the river until late.\n" for i in range(600))
ONE_LINE = "word, " * 6000  # no line break anywhere


class Recording:
    """The engine's counter, remembering how long each text it counted was."""

    def __init__(self, engine) -> None:
        self.engine, self.lengths = engine, []

    def __call__(self, text: str) -> int:
        self.lengths.append(len(text))
        return self.engine.count_tokens(text)


def _read(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_file(path)


@pytest.mark.parametrize("name, text", [("a.py", CODE), ("a.csv", CSV), ("a.json", JSON), ("a.md", PROSE)])
def test_a_file_within_the_context_is_counted_exactly(tmp_path, gui_engine, name, text):
    read = _read(tmp_path, name, text)
    counted = count_read(read, gui_engine.count_tokens, limit=10**6)
    assert counted.exact and counted.tokens == gui_engine.count_tokens(text)
    assert counted.text == f"{counted.tokens:,}"  # no "~"


def test_json_the_estimate_judges_to_fit_does_not_and_the_exact_count_says_so(tmp_path, gui_engine):
    read = _read(tmp_path, "a.json", JSON)
    room = estimate_tokens(JSON) + 10  # what the 4-characters estimate lets through
    counted = count_read(read, gui_engine.count_tokens, limit=1024)
    assert estimate_tokens(JSON) <= room < counted.tokens


def test_a_file_far_past_the_context_is_counted_only_up_to_it_and_the_rest_estimated(tmp_path, gui_engine):
    text = CSV * 40  # about 1.4M characters
    read = _read(tmp_path, "big.csv", text)
    count = Recording(gui_engine)
    counted = count_read(read, count, limit=1024)
    assert not counted.exact and counted.text.startswith("~")
    assert 0 < counted.counted_chars <= attachment_count.FIRST_PROBE < len(text) // 20 and max(count.lengths) == counted.counted_chars
    whole = gui_engine.count_tokens(text)
    assert 0.9 * whole <= counted.tokens <= 1.1 * whole  # the first part's density, not 4 characters


@pytest.mark.parametrize("name, text", [("a.py", CODE), ("a.csv", CSV), ("a.json", JSON), ("a.md", PROSE),
                                        ("a.txt", ONE_LINE)])
@pytest.mark.parametrize("room", [7, 100, 700])
def test_the_part_that_fits_really_fits(tmp_path, gui_engine, name, text, room):
    read = _read(tmp_path, name, text)
    count = Recording(gui_engine)
    attachment, counted = fit_part(read, room, count)
    exact = gui_engine.count_tokens(attachment.text)
    assert counted.exact and counted.tokens == exact <= room
    assert attachment.truncated and text.startswith(attachment.text)
    assert exact >= 0.75 * room  # not needlessly short (a cut goes back to a line break near the end)
    if name != "a.txt" and room > 7:
        assert attachment.text.endswith("\n")
    assert len(count.lengths) <= attachment_count.MAX_COUNTS + 5
    assert max(count.lengths) <= 4 * len(attachment.text) + 400  # never the whole file


def test_a_file_that_fits_whole_is_attached_whole(tmp_path, gui_engine):
    read = _read(tmp_path, "a.md", PROSE)
    attachment, counted = fit_part(read, 10**6, gui_engine.count_tokens)
    assert not attachment.truncated and attachment.text == PROSE and counted.exact


def test_without_a_counter_the_figures_are_estimates_marked_with_a_tilde(tmp_path):
    read = _read(tmp_path, "a.json", JSON)
    counted = count_read(read, None, limit=1024)
    assert not counted.exact and counted.tokens == estimate_tokens(JSON) and counted.text.startswith("~")
    attachment, part = fit_part(read, 100, None)
    assert attachment.truncated and not part.exact and part.tokens <= 100
