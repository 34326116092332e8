"""`python -m app.devtools.screenshots_reasoning [OUT]`: a picture of a thinking model's reply.

Run under a virtual display like `app.devtools.screenshots` (docs/screenshots.sh runs it). It writes
reasoning.png into OUT (default `docs/`): a conversation whose first reply's reasoning is opened
("Thought for 12 s") above its answer, and whose second is left collapsed. The replies and their
reasoning are written by hand (as in `app.devtools.screenshots`: the bundled model does not think), stored
as a thinking model's replies are: the reasoning beside the answer, with how long it took.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from app.store import open_store

TITLE = "Train meeting point"
TURNS = [
    ("user", "A train leaves at 9:00 going 60 km/h; another leaves the same station at 10:00 going "
             "90 km/h on the same track. When does the second catch up?", "", None),
    ("assistant", "The second train catches up at **noon (12:00)**, 180 km from the station.\n\n"
                  "| time | first train | second train |\n|---|---|---|\n| 10:00 | 60 km | 0 km |\n"
                  "| 11:00 | 120 km | 90 km |\n| 12:00 | 180 km | 180 km |",
     "The first train has a one-hour head start, so at 10:00 it is 60 km ahead.\n"
     "The second closes the gap at 90 − 60 = 30 km/h.\n60 km ÷ 30 km/h = 2 hours, so they meet at 12:00.\n"
     "Check: first train 3 h × 60 = 180 km; second 2 h × 90 = 180 km. ✓", 12.4),
    ("user", "And if the second one went 120 km/h?", "", None),
    ("assistant", "Then it catches up at **11:00**, 120 km out: it closes the 60 km gap at 60 km/h.",
     "Gap 60 km, closing speed 120 − 60 = 60 km/h, so one hour after 10:00.", 4.1),
]


def make_folder(home: Path) -> None:
    opened = open_store(home)
    store = opened.store
    try:
        c = store.create_conversation(TITLE)
        for role, text, reasoning, seconds in TURNS:
            store.append_message(c.id, role, text, reasoning=reasoning, reasoning_s=seconds)
    finally:
        store.close()


def main(argv: list[str]) -> int:
    from app.devtools.screenshots import save_picture, settle, start_window
    from app.devtools.self_test import wait_until

    out = Path(argv[0] if argv else "docs")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-"))
    make_folder(home)
    qapp, confab = start_window(home)
    window = confab.window
    window.bridge.run(lambda store: store.list_conversations()[0].id).success(window.show_conversation)
    wait_until(qapp, lambda: len(window.chat_view.message_views()) == len(TURNS), 30, "the conversation")
    settle(qapp, 0.5)
    window.chat_view.message_views()[1].thinking.toggle.click()  # the first reply's reasoning, opened
    settle(qapp, 0.8)
    view = window.chat_view  # from the first reply down: both replies, the second one collapsed
    first_reply = view.message_views()[1]
    view.verticalScrollBar().setValue(max(0, first_reply.mapTo(view.widget(), first_reply.rect().topLeft()).y() - 8))
    settle(qapp, 0.3)
    path = out / "reasoning.png"
    save_picture(window, path)
    window.close()
    confab.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
