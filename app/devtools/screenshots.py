"""`python -m app.devtools.screenshots [OUT]`: pictures of Confab for the README, from a sample data folder.

Run it under a virtual display (`docs/screenshots.sh` starts Xvfb) so windows are real: it writes
main-light.png, main-dark.png, quick-chat.png and prefill.png into OUT (default `docs/`). The replies in the sample
conversations are written by hand; the model is the bundled one, loaded as the app always does.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from app.store import open_store
from engine import DEFAULT_MODEL, EngineConfig, SamplingParams

SAMPLES = [
    ("Reverse a list in Python", [
        ("user", "How do I reverse a list in Python without changing the original?"),
        ("assistant", "Use slicing, which returns a new list:\n\n```python\nnumbers = [1, 2, 3, 4]\n"
                      "backwards = numbers[::-1]\nprint(backwards)  # [4, 3, 2, 1]\n```\n\n"
                      "`reversed(numbers)` gives an **iterator** instead; wrap it in `list()` when you "
                      "need a list.\n\n| way | copies? |\n|---|---|\n| `numbers[::-1]` | yes |\n"
                      "| `numbers.reverse()` | no, in place |"),
        ("user", "And for a string?"),
        ("assistant", "The same slice works: `'confab'[::-1]` is `'bafnoc'`."),
    ]),
    ("Packing list for a weekend hike", [
        ("user", "Packing list for a weekend hike?"),
        ("assistant", "- Water (2 L) and snacks\n- Rain jacket and a warm layer\n- Map, phone, power bank\n"
                      "- First-aid kit and sunscreen"),
    ]),
    ("Explain recursion simply", [
        ("user", "Explain recursion simply"),
        ("assistant", "A function that solves a problem by calling itself on a smaller piece of it, "
                      "until the piece is so small the answer is obvious."),
    ]),
]


def make_sample_folder(home: Path) -> None:
    opened = open_store(home)
    store = opened.store
    try:
        for title, messages in SAMPLES:
            c = store.create_conversation(title)
            for role, text in messages:
                store.append_message(c.id, role, text)
        store.set_pinned(store.list_conversations()[-1].id, True)
    finally:
        store.close()


def start_window(home: Path, height: int = 0):
    """(qapp, confab): Confab on `home` in a window of its default size (1040 × 680; `height`:
    another height), the bundled model loaded. Every screenshot script starts this way."""
    from PySide6.QtWidgets import QApplication

    from app.application import ConfabApp
    from app.devtools.self_test import wait_until
    from app.window.main_window import DEFAULT_SIZE

    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    confab = ConfabApp(qapp, home, EngineConfig(), use_tray=False)
    confab.window.resize(DEFAULT_SIZE[0], height or DEFAULT_SIZE[1])
    confab.show_window()
    confab.load(DEFAULT_MODEL)
    wait_until(qapp, lambda: confab.window.state == "ready", 600, "the bundled model")
    return qapp, confab


def save_picture(widget, path: Path) -> None:
    widget.grab().save(str(path))
    print(f"wrote {path}")


def main(argv: list[str]) -> int:
    from app.devtools.self_test import wait_until

    out = Path(argv[0] if argv else "docs")
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="confab-screenshots-"))
    make_sample_folder(home)
    qapp, confab = start_window(home)
    window = confab.window
    first = SAMPLES[0][0]
    window.bridge.run(lambda store: next(c.id for c in store.list_conversations() if c.title == first)).success(
        window.show_conversation)
    settle(qapp, 1.5)
    for theme in ("light", "dark"):
        confab.apply_settings(replace(confab.settings, theme=theme))
        settle(qapp, 0.8)
        save_picture(window, out / f"main-{theme}.png")
    confab.apply_settings(replace(confab.settings, theme="light"))
    confab.bridge.params = SamplingParams(temperature=0, max_tokens=80)  # a short, repeatable answer
    confab.show_quick_chat(None)
    quick = confab.quick_chat
    quick.input.setText("What is a haiku?")
    quick.send()
    wait_until(qapp, lambda: quick.reply_text and not confab.bridge.replying(), 300,
               f"the quick chat answer ({quick.status_label.text()})")
    settle(qapp, 0.8)
    save_picture(quick, out / "quick-chat.png")
    quick.hide()
    prefill_shot(qapp, confab, out)
    window.close()
    confab.shutdown()
    return 0


LONG_REPORT = ("The river rises in the eastern hills, gathers three streams below the old mill and "
               "floods the lower meadows most springs; the village council has argued for years about "
               "levees, a bypass channel or simply moving the sports ground. ") * 60
"""A long message (about 2,500 tokens), so the bundled model reads it over several prefill chunks."""


def prefill_shot(qapp, confab, out: Path) -> None:
    """The window while a long message is read: "Reading your message… n / N tokens" and a bar."""
    from app.devtools.self_test import wait_until

    window = confab.window
    window.new_conversation()
    window.composer.setPlainText("Summarize this for the council in three bullet points:\n\n" + LONG_REPORT)
    window.composer.submit()
    wait_until(qapp, lambda: any(done >= 512 for done, _ in window.chat.reading.values()), 600,
               "the long message's reading progress")
    settle(qapp, 0.3)
    save_picture(window, out / "prefill.png")
    window.chat.stop()
    wait_until(qapp, lambda: not confab.bridge.replying(), 600, "the stopped reply")  # after the forward under way


def settle(qapp, seconds: float) -> None:
    """Let layouts, timers and repaints run for a moment before a picture is taken."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        qapp.processEvents()
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
