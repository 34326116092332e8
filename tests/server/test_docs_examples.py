"""Every example in docs/serve.md runs as written against a real server on the bundled model: the
Python blocks in order (later ones use the `client` and `tools` of earlier ones), and every curl
command (with --fail-with-body, so an HTTP error fails it). Only the address is changed, to the
test server's port."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "serve.md"
BLOCK = re.compile(r"^```(python|bash|sh)\n(.*?)^```", re.S | re.M)
ADDRESS = "http://127.0.0.1:8317"


def _blocks(*langs: str) -> list[str]:
    return [code for lang, code in BLOCK.findall(DOC.read_text(encoding="utf-8")) if lang in langs]


def test_the_docs_have_the_examples_this_test_runs():
    assert len(_blocks("python")) >= 5 and len([b for b in _blocks("bash", "sh") if "curl " in b]) >= 4
    assert ADDRESS in _blocks("python")[0]


def test_python_examples_run_as_written(serve, bundled_engine):
    server = serve(bundled_engine)
    base = server.url.removesuffix("/v1")
    namespace: dict = {}
    for i, code in enumerate(_blocks("python")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code.replace(ADDRESS, base), f"docs/serve.md python block {i}", "exec"), namespace)
        assert out.getvalue().strip() or "print(" not in code, f"block {i} printed nothing"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the examples use curl")
@pytest.mark.parametrize("index", range(len([b for b in _blocks("bash", "sh") if "curl " in b])))
def test_curl_examples_run_as_written(serve, bundled_engine, index):
    code = [b for b in _blocks("bash", "sh") if "curl " in b][index]
    server = serve(bundled_engine)
    script = code.replace(ADDRESS, server.url.removesuffix("/v1")).replace("curl ", "curl -sS --fail-with-body ")
    done = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()
