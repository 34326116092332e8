"""`python -m app --self-test` end to end on the bundled model: the command a packaged app runs too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_self_test_passes_on_the_bundled_model(bundled_folder):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "CONFAB_HOME")}
    done = subprocess.run([sys.executable, "-m", "app", "--self-test"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "at most 2 streamed at the same time" in out
    assert out.count("after restart:") == 2 and "self-test passed" in out


def test_self_test_fails_with_the_reason(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([sys.executable, "-m", "app", "--self-test", "--model", str(tmp_path / "missing")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "self-test FAILED" in done.stdout and "missing" in done.stdout
