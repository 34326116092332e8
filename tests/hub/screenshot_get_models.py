"""Screenshot of Model ▸ Get models… during a download: docs/get-models.png.

Runs the dialog against the tests' fake Hub (a stand-in repo with a few GGUF quantizations served
slowly), so the picture needs no network. Run on a display (docs/screenshots.sh runs it under Xvfb):

    python -m tests.hub.screenshot_get_models docs
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from tests.hub.fake_hub import FakeHub, Repo, running


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "docs")
    fake = FakeHub(delay_per_chunk=0.004)
    mb = 1 << 20
    files = {f"Demo-1B-Instruct-{q}.gguf": bytes(n * mb) for q, n in (("Q4_K_M", 48), ("Q5_K_M", 56), ("Q8_0", 80))}
    fake.repos["example-org/Demo-1B-Instruct-GGUF"] = Repo(files, ["gguf", "text-generation"])
    fake.repos["example-org/Demo-3B-Instruct"] = Repo({"config.json": b"{}", "model.safetensors": b"x"},
                                                       ["safetensors", "text-generation"], downloads=50)
    with running(fake):
        os.environ["HF_ENDPOINT"] = fake.url
        os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="confab-shot-hub-")
        from PySide6.QtWidgets import QApplication

        from app.models.get_models_dialog import GetModelsDialog

        qapp = QApplication(sys.argv[:1])
        dialog = GetModelsDialog(max_context=4096)
        dialog.show()
        dialog.query.setText("Demo")
        dialog.search()
        wait(qapp, lambda: dialog.repos.topLevelItemCount() == 2)
        dialog.repos.setCurrentItem(dialog.repos.topLevelItem(0))
        wait(qapp, lambda: dialog.files.topLevelItemCount() == 3)
        dialog.select_file(0)
        dialog.start_download()
        wait(qapp, lambda: dialog.progress.value() > 420)
        settle(qapp, 0.3)
        dialog.grab().save(str(out / "get-models.png"))
        print(f"wrote {out / 'get-models.png'}")
        dialog.cancel()
        wait(qapp, lambda: dialog._download is None)
        dialog.close()
    return 0


def wait(qapp, condition, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("the dialog did not get there")
        qapp.processEvents()
        time.sleep(0.01)


def settle(qapp, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        qapp.processEvents()
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
