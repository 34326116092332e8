"""`python -m app.devtools.screenshots_layout [OUT]`: the window at its default size and at its
minimum width, on the rows that once pushed it wider than itself, to look at.

Run under a virtual display like `app.devtools.screenshots`. A conversation with its own system
prompt and a long title holds a question sent with four files, a reply full of long words (a URL,
a path) and a reply that failed with a long error without spaces; the local API is on. Writes
layout-default.png, layout-minimum.png and layout-minimum-dark.png into OUT (default: a new
temporary folder, printed).
"""

from __future__ import annotations

import socket
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ERROR = ("ServerUnreachableError:connection-refused:nothing-listens-at-http://127.0.0.1:8799/v1/chat/"
         "completions(is-the-server-running?)")
WORDS = ("See https://example.com/a/very/long/address/" + "segment/" * 12 + "end.html and the file "
         "/home/someone/projects/" + "deeper_folder/" * 8 + "report.txt.")
FILES = (("quarterly-financial-report-2026-final.pdf", "application/pdf"), ("river-levels-by-hour.csv", "text/csv"),
         ("meeting-notes.md", "text/markdown"), ("analysis_script.py", "text/x-python"))


def add_hard_conversation(store) -> int:
    from app.store import Attachment

    files = tuple(Attachment(name, media, 2000, "text " * 400) for name, media in FILES)
    c = store.create_conversation("The river council's plans for the levee and the bypass channel",
                                  system_prompt="You are a patient teacher who explains every step.")
    store.append_message(c.id, "user", "Read these and tell me what changed.", attachments=files)
    store.append_message(c.id, "assistant", WORDS, model="bundled:smollm2-135m-instruct")
    store.append_message(c.id, "user", "And what should we do?")
    store.append_message(c.id, "assistant", "", status="error", error=ERROR)
    return c.id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str]) -> int:
    from app.devtools.screenshots import make_sample_folder, save_picture, settle, start_window
    from app.devtools.self_test import wait_until
    from app.window.main_window import DEFAULT_SIZE, MINIMUM_SIZE

    out = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="confab-layout-"))
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-"))
    make_sample_folder(home)
    qapp, confab = start_window(home)
    window = confab.window
    made = []
    confab.bridge.run(add_hard_conversation).success(made.append)
    wait_until(qapp, lambda: bool(made), 30, "the sample conversation")
    confab.apply_settings(replace(confab.settings, api_server=True, api_port=free_port()))
    wait_until(qapp, lambda: bool(confab.local_server.address), 60, "the local API")
    window.refresh_conversations(select=made[0])
    wait_until(qapp, lambda: len(window.chat_view.message_views()) == 4, 30, "its messages")
    window.show_speed(10.5, 0.085)
    for name, size, theme in (("default", DEFAULT_SIZE, "light"), ("minimum", MINIMUM_SIZE, "light"),
                              ("minimum-dark", MINIMUM_SIZE, "dark")):
        confab.apply_settings(replace(confab.settings, theme=theme))
        window.resize(*size)
        settle(qapp, 1.0)
        save_picture(window, out / f"layout-{name}.png")
    window.close()
    confab.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
