"""`python -m app.devtools.bench_ui [--model SOURCE] [--conversations 4] [--tokens 96] [--json]`: how the
window keeps up while several replies stream at once.

Drives the real window (offscreen when there is no display) in a temporary data folder: starts
`--conversations` replies at once, switches the shown conversation every half second, and prints
- the longest GUI event-loop stall (a 5 ms timer's worst lateness),
- chunk → GUI: from the store thread handing a chunk over to its callback running on the GUI thread,
- chunk → view: from that hand-over to the shown message being re-rendered with it.
Figures only, never asserted: these machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from engine import DEFAULT_MODEL, Chunk, EngineConfig, SamplingParams

TICK_MS = 5
SWITCH_S = 0.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.devtools.bench_ui", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=96, help="tokens per reply")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    home = Path(tempfile.mkdtemp(prefix="confab-bench-ui-"))
    try:
        figures = run(args, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        print(json.dumps(figures))
    else:
        for name, value in figures.items():
            print(f"{name:28} {value}")
    return 0


def run(args: argparse.Namespace, home: Path) -> dict:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.chat import message_view
    from app.application import ConfabApp
    from app.bridge import bridge as bridge_module
    from app.devtools.self_test import wait_until

    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    confab = ConfabApp(qapp, home, EngineConfig(), use_tray=False)
    window, bridge = confab.window, confab.bridge
    confab.show_window()
    confab.load(args.model)
    wait_until(qapp, lambda: window.state != "loading", 600, f"{args.model} to load")
    bridge.params = SamplingParams(temperature=0, max_tokens=args.tokens, ignore_stop=True)

    to_gui: list[float] = []
    to_view: list[float] = []
    unrendered: list[float] = []  # hand-over times of chunks shown but not yet rendered
    handed: list[float] = [0.0]  # hand-over time of the chunk whose callback is running
    real_post, real_append = bridge.route.post, window.chat_view.append_to_last
    real_render = message_view.MessageView.render_body

    def post(fn, *fn_args):
        if fn is bridge_module._call and len(fn_args) == 2 and isinstance(fn_args[1], Chunk) \
                and fn_args[1].prefill is None:  # a long prompt's progress is no reply text
            return real_post(timed, fn, fn_args, time.perf_counter())
        return real_post(fn, *fn_args)

    def timed(fn, fn_args, t_post: float) -> None:
        to_gui.append(time.perf_counter() - t_post)
        handed[0] = t_post
        fn(*fn_args)

    def append(text: str) -> None:
        unrendered.append(handed[0])
        real_append(text)

    def rendered(view) -> None:  # not "render": PySide would take that name for QWidget.render
        real_render(view)
        now = time.perf_counter()
        to_view.extend(now - t for t in unrendered)
        unrendered.clear()

    bridge.route.post, window.chat_view.append_to_last = post, append
    message_view.MessageView.render_body = rendered
    stalls = [0.0]
    last_tick = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        stalls.append(now - last_tick[0] - TICK_MS / 1000)
        last_tick[0] = now

    timer = QTimer()
    timer.setInterval(TICK_MS)
    timer.timeout.connect(tick)
    try:
        ids = start_replies(qapp, window, args.conversations, wait_until)
        started = time.perf_counter()
        last_tick[0] = started
        timer.start()
        turn = 0
        while bridge.replying():
            turn += 1
            window.show_conversation(ids[turn % len(ids)])
            wait_until(qapp, lambda t=time.perf_counter(): time.perf_counter() - t > SWITCH_S or not bridge.replying(),
                       600, "the replies")
        elapsed = time.perf_counter() - started
        timer.stop()
    finally:
        message_view.MessageView.render_body = real_render
        window.close()
        confab.shutdown()
    return {
        "model": f"{confab.engine.model.name} on {confab.engine.backend}/{confab.engine.device}",
        "conversations": args.conversations,
        "chunks": len(to_gui),
        "aggregate_tok_s": round(args.conversations * args.tokens / elapsed, 1),
        "longest_stall_ms": round(max(stalls) * 1000, 1),
        "chunk_to_gui_p50_ms": _ms(statistics.median(to_gui)),
        "chunk_to_gui_max_ms": _ms(max(to_gui)),
        "chunk_to_view_p50_ms": _ms(statistics.median(to_view)) if to_view else None,
        "chunk_to_view_p95_ms": _ms(_p95(to_view)) if to_view else None,
        "chunk_to_view_max_ms": _ms(max(to_view)) if to_view else None,
    }


def start_replies(qapp, window, count: int, wait_until) -> list[int]:
    """Send a question in `count` new conversations, one right after the other."""
    ids = []
    for i in range(count):
        window.new_conversation()
        window.send(f"Question {i + 1}: tell me a long story about the number {i + 1}.")
        wait_until(qapp, lambda: window.current_id is not None, 30, "a new conversation")
        ids.append(window.current_id)
    return ids


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


if __name__ == "__main__":
    sys.exit(main())
