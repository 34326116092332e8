"""At the minimum width the status bar gives up room from its least useful part first: the last
reply's speed ("20.2 tok/s") and the model's name stay whole while the backend, the figures and the
API's address are elided, each with its whole text in its tooltip."""

from __future__ import annotations

import os
import socket

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import Capacity  # noqa: E402
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: E402,F401 (fixtures)
from app.window.status_parts import PART_EXTRA, PartLabel, StatusParts  # noqa: E402
from tests.app.layout_checks import MINIMUM  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_speed_and_the_model_stay_whole_at_the_minimum_width(qtbot, window):  # noqa: F811
    from app.models.local_server import LocalServer

    server = LocalServer(window.bridge.route)
    window.add_status_part(server.label)
    server.apply(True, _free_port(), "")
    try:
        qtbot.waitUntil(lambda: server.address != "", timeout=30_000)
        window.set_model("Qwen2.5-1.5B-Instruct-Q4_K_M", "llamacpp", "cuda", max_context=2048,
                         precision="float16 · 4-bit weights", placement="RTX 4070 · 29/29 layers")
        window.figures.set_capacity_source(lambda: Capacity(100 << 20, 20 << 20, 64, 4, 1 << 30))
        window.show_speed(20.2, 0.085)
        window.notices.show("Model ready")
        window.resize(*MINIMUM)
        qtbot.waitUntil(lambda: window.stats_label.compact_mode, timeout=5_000)
        qtbot.wait(50)
        assert window.stats_label.shown_text() == "20.2 tok/s"
        labels = [window.stats_label, window.model_label, window.figures, window.backend_label, server.label]
        elided = [label for label in labels if label.shown_text().endswith("…")]
        assert elided and all(label.toolTip() for label in elided)
        for label in elided:  # a part is cut only once every less useful part is down to its least
            less = [o for o in labels if o.priority < label.priority]
            assert all(o.width() <= PartLabel.MIN_WIDTH + 1 for o in less), (label.text(), [o.width() for o in less])
        assert window.backend_label in elided  # the least useful gives up its room first
        needed = (StatusParts.SHORT_NOTICE_ROOM + PART_EXTRA * len(labels) + PartLabel.MIN_WIDTH * 3
                  + sum(label.sizeHint().width() for label in labels[:2]))
        if needed <= window.statusBar().width():  # room for both with this font: both whole
            assert window.model_label.shown_text() == "Qwen2.5-1.5B-Instruct-Q4_K_M"
    finally:
        server.close()
