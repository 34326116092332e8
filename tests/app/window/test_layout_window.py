"""The window room's layout at the default size and at the minimum width: the header elides and
never pushes (the conversation list keeps the width it was given, the window never resizes
itself), and every status bar part fits whole or ends in "…", with the API on and connected to a
remote server; at the default width the parts fit whole, in their compact form if need be."""

from __future__ import annotations

import os
import socket

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from engine import Capacity  # noqa: E402
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: E402,F401 (fixtures)
from tests.app.layout_checks import DEFAULT, MINIMUM, add_conversation, inside  # noqa: E402

PROMPT = "You are a patient teacher who explains every step."
MODEL = "bundled:smollm2-135m-instruct"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_conversations(qtbot, window) -> tuple[int, int]:
    """(a plain conversation, one with its own system prompt and a long title)."""
    made = []
    window.bridge.run(lambda store: (
        add_conversation(store, "Tell me about rivers"),
        add_conversation(store, "A conversation with a rather long title about the river council's "
                                "plans for the levee and the bypass channel", system_prompt=PROMPT),
    )).success(made.append)
    qtbot.waitUntil(lambda: bool(made), timeout=5_000)
    return made[0]


def list_width(window) -> int:
    return window.splitter.sizes()[0]


@pytest.mark.parametrize("size", [DEFAULT, MINIMUM], ids=["default", "minimum"])
def test_the_header_never_pushes_the_list_or_the_window(qtbot, window, size):
    window.set_model(MODEL, "llamacpp", "cpu", max_context=131072, precision="float16 · 4-bit weights")
    plain, prompted = two_conversations(qtbot, window)
    window.resize(*size)
    window.show_conversation(plain)
    qtbot.wait(100)
    width, listed = window.width(), list_width(window)
    assert width == size[0]
    window.show_conversation(prompted)
    qtbot.waitUntil(lambda: window.chat.prompt_badge.isVisible(), timeout=5_000)
    for used in (9, 12_345, 123_456):  # the count changes: nothing moves
        window.chat.context_meter.set_used(used)
        qtbot.wait(30)
        assert (window.width(), list_width(window)) == (width, listed)
    header = [window.chat.title_label, window.chat.prompt_badge, window.chat.context_meter,
              window.chat.settings_button]
    assert all(inside(w, window.chat) for w in header)
    assert window.chat.title_label.text().startswith("A conversation with")  # whole, elided only when drawn


def test_shrinking_to_the_minimum_takes_the_width_from_the_chat_not_the_list(qtbot, window):
    plain, prompted = two_conversations(qtbot, window)
    window.show_conversation(prompted)
    qtbot.waitUntil(lambda: window.chat.prompt_badge.isVisible(), timeout=5_000)
    listed = list_width(window)
    window.resize(*MINIMUM)
    qtbot.wait(50)
    assert window.width() == MINIMUM[0] and list_width(window) == listed
    assert window.minimumSizeHint().width() <= MINIMUM[0]


def part_problems(window) -> list[str]:
    """Each visible status bar part whose drawn text neither is one of its forms nor ends in "…",
    is wider than its room, or lies outside the bar."""
    from app.window.status_parts import StatusPart

    bar = window.statusBar()
    problems = []
    for part in bar.findChildren(StatusPart):
        if not part.isVisible():
            continue
        label = part.label
        shown = label.shown_text() if hasattr(label, "shown_text") else label.text()
        forms = (label.text(), getattr(label, "compact_text", lambda: "")())
        if shown not in forms and not shown.endswith("…"):
            problems.append(f"{label.text()!r} drawn as {shown!r}")
        if label.fontMetrics().horizontalAdvance(shown) > label.contentsRect().width():
            problems.append(f"{shown!r} is wider than its {label.contentsRect().width()} px")
        if not inside(part, bar):
            problems.append(f"{label.text()!r} lies outside the bar")
    return problems


@pytest.fixture
def api_on(qtbot, window):
    """The local API server on (a free port), its address a part of the status bar."""
    from app.models.local_server import LocalServer

    server = LocalServer(window.bridge.route)
    window.add_status_part(server.label)
    server.apply(True, free_port(), "")
    qtbot.waitUntil(lambda: server.address != "", timeout=30_000)
    yield server
    server.close()


def fill_status(window, backend: str = "llamacpp", device: str = "cpu") -> None:
    window.set_model(MODEL, backend, device, max_context=2048, precision="float16 · 4-bit weights")
    window.figures.set_capacity_source(lambda: Capacity(100 << 20, 20 << 20, 64, 4, 1 << 30))
    window.show_speed(10.5, 0.085)


@pytest.mark.parametrize("backend, device", [("llamacpp", "cpu"), ("remote", "http://127.0.0.1:8799/v1")],
                         ids=["local", "remote"])
def test_at_the_default_width_every_part_fits_whole(qtbot, window, api_on, backend, device):
    fill_status(window, backend, device)
    window.resize(*DEFAULT)
    window.notices.show("Model ready")
    qtbot.wait(100)
    assert part_problems(window) == []
    from app.window.status_parts import StatusPart

    parts = [p for p in window.statusBar().findChildren(StatusPart) if p.isVisible()]
    assert api_on.label in [p.label for p in parts]  # the API part has its line like the others
    elided = [p.label.text() for p in parts if p.label.shown_text().endswith("…")]
    assert elided == []
    for p in parts:  # a compact part keeps its details in its tooltip
        assert p.label.toolTip()


@pytest.mark.parametrize("size", [DEFAULT, MINIMUM, (1400, 680)], ids=["default", "minimum", "wide"])
def test_every_part_fits_or_ends_in_an_ellipsis(qtbot, window, api_on, size):
    fill_status(window)
    window.resize(*size)
    qtbot.wait(100)
    assert part_problems(window) == []
    window.show_speed(123.4, 1.234)  # a new figure: still fitted, no clipping
    qtbot.wait(50)
    assert part_problems(window) == []


def test_a_wide_window_shows_the_whole_texts(qtbot, window, api_on):
    fill_status(window)
    window.resize(2400, 680)  # room for every whole text, whatever the test machine's font
    qtbot.waitUntil(lambda: not window.backend_label.compact_mode, timeout=5_000)
    assert window.backend_label.shown_text() == "llama.cpp on CPU · float16 · 4-bit weights"
    assert window.model_label.shown_text() == MODEL


@pytest.mark.parametrize("width", [140, 200, 400])
def test_a_snippet_in_a_narrow_list_starts_near_its_match(qapp, width):
    from PySide6.QtGui import QFontMetrics

    from app.window.conversation_delegate import LEAD_SHARE, snippet_for_width
    from app.window.conversation_list import snippet_html

    metrics = QFontMetrics(qapp.font())
    snippet = snippet_html("…the council argued for years about the sports ground and then about [levees] again…")
    shown = snippet_for_width(snippet, metrics, width)
    lead = shown[:shown.index("<b>")]
    assert metrics.horizontalAdvance(lead) <= width * LEAD_SHARE and shown.endswith("<b>levees</b> again…")
    short = snippet_html("[levees] first")
    assert snippet_for_width(short, metrics, width) == short  # a match at the start: left alone
