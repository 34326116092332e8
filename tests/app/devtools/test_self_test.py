"""`python -m app --self-test` end to end on the bundled model: the command a packaged app runs too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_self_test_passes_on_the_bundled_model(bundled_folder):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "CONFAB_HOME")}
    done = subprocess.run([sys.executable, "-m", "app", "--self-test"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "at most 2 streamed at the same time" in out
    assert out.count("after restart:") == 2 and "self-test passed" in out
    assert "read back the text of a PDF it wrote" in out
    assert "check: kernel path: " in out and "kernel check passed" in out


def test_self_test_fails_with_the_reason(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([sys.executable, "-m", "app", "--self-test", "--model", str(tmp_path / "missing")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "self-test FAILED" in done.stdout and "missing" in done.stdout


def test_a_frozen_build_without_llama_cpp_fails_its_self_test(monkeypatch, capsys):
    from app.devtools import self_test
    from engine import LlamaLibrary

    missing = LlamaLibrary(False, "FileNotFoundError: Shared library with base name 'llama' not found")
    monkeypatch.setattr(self_test, "llama_library", lambda: missing)
    with pytest.raises(self_test.SelfTestFailed, match="llama.cpp does not load in this build .*'llama' not found"):
        self_test.check_llama_library(frozen=True)
    self_test.check_llama_library(frozen=False)  # a source install may lack it: said, not failed
    assert "llama.cpp is not installed here" in capsys.readouterr().out


def test_the_self_test_says_which_llama_cpp_loads(capsys):
    from app.devtools import self_test

    self_test.check_llama_library(frozen=True)  # the installed llama-cpp-python loads here
    assert "llama.cpp loads: llama-cpp-python 0.3.16 (CPU" in capsys.readouterr().out


def test_the_pdf_step_reads_back_what_it_wrote(tmp_path, capsys):
    from app.devtools.self_test import check_pdf

    check_pdf(tmp_path)
    assert (tmp_path / "self-test.pdf").read_bytes().startswith(b"%PDF-")
    assert "read back the text of a PDF it wrote" in capsys.readouterr().out


def test_the_pdf_step_fails_with_the_reason_when_pdfium_is_missing(tmp_path, monkeypatch):
    """What a build that left PDFium out would say (its import fails), rather than a crash later."""
    from app.devtools.self_test import SelfTestFailed, check_pdf

    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # import pypdfium2 → ImportError
    with pytest.raises(SelfTestFailed, match="PDF files cannot be read: ModuleNotFoundError"):
        check_pdf(tmp_path)


def test_the_kernel_step_runs_the_check_and_prints_it(tiny_models, tmp_path, capsys, monkeypatch):
    from app.devtools.self_test import check_kernels
    from engine import EngineConfig
    from engine.models.sources import bundled_gguf
    from tests.engine.gguf_from_hf import write_gguf_from_folder

    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("CONFAB_THREADS", "1")
    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    gguf = write_gguf_from_folder(tiny_models["llama"], tmp_path / "tiny.gguf", bundled_gguf("smollm2-135m-instruct"))
    check_kernels(str(gguf), EngineConfig())
    out = capsys.readouterr().out
    assert "self-test: check: CPU: " in out and "self-test: check: kernel path: " in out
    assert "self-test: check:   pieces of 32" in out and "self-test: kernel check passed" in out


def test_kernels_that_disagree_fail_the_self_test(monkeypatch):
    from app.devtools import self_test
    from engine import EngineConfig

    monkeypatch.setattr(self_test, "check_model", lambda *a, **k: False)
    with pytest.raises(self_test.SelfTestFailed, match="kernels give different logits for the same prompt"):
        self_test.check_kernels("bundled:smollm2-135m-instruct", EngineConfig())


def test_a_frozen_build_must_run_the_bundled_model_on_llama_cpp():
    from app.devtools.self_test import SelfTestFailed, check_backend

    with pytest.raises(SelfTestFailed, match="runs on torch, not llama.cpp"):
        check_backend("bundled:smollm2-135m-instruct", "torch", frozen=True)
    check_backend("bundled:smollm2-135m-instruct", "llamacpp", frozen=True)
    check_backend("bundled:smollm2-135m-instruct", "torch", frozen=False)  # a source install without llama.cpp
    check_backend("/models/some-folder", "torch", frozen=True)  # --model: whatever it names
