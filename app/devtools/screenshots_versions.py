"""`python -m app.devtools.screenshots_versions [OUT]`: a picture of message versions and Continue.

Run under a virtual display like `app.devtools.screenshots` (docs/screenshots.sh runs both). With the
bundled model it asks for a story cut at 16 tokens, regenerates it twice (the old versions are
kept), steps back to the second version ("‹ 2/3 ›") and writes versions.png into OUT (default
`docs/`): the reply says "Stopped at the 16-token limit", shows the model that wrote it, and
offers Continue.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from engine import SamplingParams


def main(argv: list[str]) -> int:
    from app.devtools.screenshots import make_sample_folder, save_picture, settle, start_window
    from app.devtools.self_test import wait_until

    out = Path(argv[0] if argv else "docs")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-"))
    make_sample_folder(home)
    qapp, confab = start_window(home)
    window = confab.window
    chat = window.chat

    def finished_reply() -> bool:
        views = chat.chat_view.message_views()
        return (not confab.bridge.replying() and len(views) >= 2 and views[-1].shown.id is not None
                and views[-1].shown.status != "streaming")

    window.show_conversation(None)
    settle(qapp, 0.5)
    for seed in (1, 2, 3):
        confab.bridge.params = SamplingParams(temperature=0.8, seed=seed, max_tokens=16)
        if seed == 1:
            chat.send("Tell me a very short story about a lighthouse keeper.")
        else:
            chat.regenerate()
        settle(qapp, 0.3)
        wait_until(qapp, finished_reply, 300, f"reply {seed}")
        settle(qapp, 0.8)
    last = chat.chat_view.message_views()[-1].shown.id
    chat.show_version(last, -1)
    wait_until(qapp, lambda: chat.chat_view.message_views()[-1].shown.version == 2, 30, "version 2")
    settle(qapp, 0.8)
    path = out / "versions.png"
    save_picture(window, path)
    window.close()
    confab.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
