"""`python -m engine bench --vision --json` prints every figure it documents (on the tiny vision model,
so it runs in seconds; the figures themselves are never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_bench_vision_json_has_every_figure(vision_model):
    out = subprocess.run([sys.executable, "-m", "engine", "bench", "--vision", "--json", "--model", str(vision_model),
                          "--tokens", "8"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)[vision_model.name]
    assert figures["image_tokens"] == 16
    for key in ("encode_s", "ttft_s", "ttft_again_s", "ttft_text_s", "decode8_text_tok_s",
                "decode8_two_images_tok_s", "decode8_ratio"):
        assert figures[key] > 0, key
