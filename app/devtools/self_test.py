"""`python -m app --self-test`: the real window on a real model, end to end, in a temporary folder.

Checks that llama.cpp's library loads (required in a frozen build), then that the model's logits
agree however its prompt is prefilled (`engine.check_model`, as `python -m engine check` without
the float32 reference, whose torch forward is slow on a big model), then writes a one-line PDF
and reads its text back as an attached file is read: PDFium is a native library that pypdfium2 loads
by path, which a packaged build must have collected. Then it starts the app (offscreen when there is
no display), sends a message in two conversations at once, waits for both replies, closes the app,
starts it again on the same folder and checks that both conversations are there with their replies.
Prints each step; exits 0, or 1 with the reason.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from engine import EngineConfig, SamplingParams, check_model, llama_library

QUESTIONS = ("Name three colours.", "What is the capital of France?")
PARAMS = SamplingParams(temperature=0, max_tokens=40)
LOAD_TIMEOUT_S = 600
REPLY_TIMEOUT_S = 300
PDF_TEXT = "Confab reads the text of PDF files."


class SelfTestFailed(Exception):
    """A step of the self-test did not do what it should."""


def run_self_test(source: str, config: EngineConfig) -> int:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and sys.platform.startswith("linux"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    home = Path(tempfile.mkdtemp(prefix="confab-self-test-"))
    started = time.perf_counter()
    try:
        check_llama_library(frozen=bool(getattr(sys, "frozen", False)))
        check_kernels(source, config)
        check_pdf(home)
        first_run(qapp, home, source, config)
        second_run(qapp, home, source, config)
    except SelfTestFailed as e:
        print(f"self-test FAILED: {e}", flush=True)
        return 1
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"self-test passed in {time.perf_counter() - started:.1f} s", flush=True)
    return 0


def check_llama_library(frozen: bool) -> None:
    """An installer must ship llama.cpp's library and load it (GGUF models run on it); a source
    install may lack it (bootstrap.py goes on without it where it cannot build), which is said."""
    found = llama_library()
    if found.available:
        say(f"llama.cpp loads: {found.detail}")
    elif frozen:
        raise SelfTestFailed(f"llama.cpp does not load in this build ({found.detail})")
    else:
        say(f"llama.cpp is not installed here ({found.detail}); GGUF models run on torch")


def check_kernels(source: str, config: EngineConfig) -> None:
    """The model's logits agree however its prompt is prefilled (a wrong CPU kernel shows here); a
    failed load-time check that fell back to plain kernels is said, and passes if those agree."""
    try:
        ok = check_model(source, config.backend, reference=False, say=lambda line: say(f"check: {line}"))
    except Exception as e:  # the model does not load: the window's own load step says why
        say(f"check: could not run ({type(e).__name__}: {e})")
        return
    if not ok:
        raise SelfTestFailed("this CPU's kernels give different logits for the same prompt (see check: above)")
    say("kernel check passed")


def check_pdf(folder: Path) -> None:
    """Attaching a PDF works: write one with PDFium, read it back through the attachment reader."""
    from app.chat.attachment_reader import read_file

    path = folder / "self-test.pdf"
    try:
        write_tiny_pdf(path, PDF_TEXT)
        text = read_file(path).text.strip()
    except Exception as e:  # ImportError or OSError when PDFium's library is missing from a build
        raise SelfTestFailed(f"PDF files cannot be read: {type(e).__name__}: {e}") from e
    if text != PDF_TEXT:
        raise SelfTestFailed(f"a PDF's text read back as {text!r}, not {PDF_TEXT!r}")
    say("read back the text of a PDF it wrote (PDFium is there)")


def write_tiny_pdf(path: Path, text: str) -> None:
    """A one-page PDF holding `text` in Helvetica, written by PDFium itself (pypdfium2 has no
    helper for text objects, so its raw bindings: new text object, set its text, place it)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    try:
        page = pdf.new_page(400, 100)
        obj = raw.FPDFPageObj_NewTextObj(pdf, b"Helvetica", ctypes.c_float(12))
        wide = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
        if not raw.FPDFText_SetText(obj, ctypes.cast(wide, ctypes.POINTER(raw.FPDF_WCHAR))):
            raw.FPDFPageObj_Destroy(obj)
            raise OSError("PDFium could not set the text of a text object")
        raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 20, 50)
        raw.FPDFPage_InsertObject(page, obj)  # the page owns it from here
        page.gen_content()
        page.close()
        pdf.save(str(path))
    finally:
        pdf.close()


def first_run(qapp, home: Path, source: str, config: EngineConfig) -> None:
    confab = start_app(qapp, home, source, config)
    window = confab.window
    overlap = []
    window.chat.replies_changed.connect(lambda: overlap.append(len(confab.bridge.replying())))
    for question in QUESTIONS:
        window.show_conversation(None)
        window.send(question)
        wait_until(qapp, lambda: window.current_id is not None, 30, "a conversation to be created")
    say(f"sent {len(QUESTIONS)} messages in two new conversations")
    wait_until(qapp, lambda: overlap and not confab.bridge.replying(), REPLY_TIMEOUT_S, "both replies to finish")
    say(f"both replies finished; at most {max(overlap)} streamed at the same time")
    if max(overlap) < 2:
        raise SelfTestFailed("the two replies did not stream at the same time")
    window.close()
    confab.shutdown()
    say("closed the window and the engine")


def second_run(qapp, home: Path, source: str, config: EngineConfig) -> None:
    confab = start_app(qapp, home, source, config)
    found: list = []
    confab.bridge.run(lambda store: [(c.title, store.messages(c.id)) for c in store.list_conversations()]).success(
        found.append).failure(lambda e: found.append(e))
    wait_until(qapp, lambda: bool(found), 30, "the stored conversations")
    try:
        if isinstance(found[0], BaseException):
            raise SelfTestFailed(f"could not read the store: {found[0]}")
        conversations = dict(found[0])
        for question in QUESTIONS:
            messages = conversations.get(question)
            if messages is None:
                raise SelfTestFailed(f"conversation {question!r} is missing after the restart")
            roles = [(m.role, m.status) for m in messages]
            if roles != [("user", "complete"), ("assistant", "complete")] or not messages[1].content.strip():
                raise SelfTestFailed(f"conversation {question!r} holds {roles} after the restart")
            say(f"after restart: {question!r} → {messages[1].content.strip()[:60]!r}")
    finally:
        confab.window.close()
        confab.shutdown()


def start_app(qapp, home: Path, source: str, config: EngineConfig):
    from app.application import ConfabApp

    confab = ConfabApp(qapp, home, config, use_tray=False)
    confab.bridge.params = PARAMS
    failures: list[str] = []
    confab.loader.failed.connect(lambda failed, message: failures.append(f"could not load {failed}: {message}"))
    confab.show_window()
    confab.load(source)
    wait_until(qapp, lambda: confab.window.state != "loading", LOAD_TIMEOUT_S, f"{source} to load")
    if confab.window.state != "ready":  # the whole reason, not the status bar's fitted notice
        raise SelfTestFailed(failures[-1] if failures else confab.window.notices.text)
    say(f"window up in {home}, model {confab.engine.model.name} on {confab.engine.backend}/{confab.engine.device}")
    check_backend(source, confab.engine.backend, frozen=bool(getattr(sys, "frozen", False)))
    return confab


def check_backend(source: str, backend: str, frozen: bool) -> None:
    """An installer ships the bundled model's GGUF to run it on llama.cpp, the fast path a source
    install takes; a frozen build that ends up on another backend has lost it (a fifth of the speed)."""
    if frozen and source.startswith("bundled:") and backend != "llamacpp":
        raise SelfTestFailed(f"the bundled model runs on {backend}, not llama.cpp: the build lacks its GGUF")


def wait_until(qapp, done: Callable[[], object], timeout_s: float, what: str) -> None:
    """Run the event loop until `done()` is true; SelfTestFailed naming `what` after the timeout."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise SelfTestFailed(f"timed out after {timeout_s:.0f} s waiting for {what}")
        qapp.processEvents()
        time.sleep(0.005)


def say(message: str) -> None:
    print(f"self-test: {message}", flush=True)
