"""Images in the window (issue 36, item 3): a pasted, dropped or picked image shows as a chip with
its thumbnail, its size in pixels (a large photo scaled down, both sizes shown) and the tokens the
model counts for it; sent on a vision model, the model reads it (the reply is the engine's own for
that image), the database keeps its bytes, the history shows it after a restart, a click shows it
large, and the exports carry it. A text model refuses an image before anything is sent, saying
which models can see. The quick chat takes a pasted image too.

Runs on the tiny vision GGUF and its mmproj that the engine's tests build (skipped without libmtmd)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, QSize, Qt, QUrl
from PySide6.QtGui import QColor, QDragEnterEvent, QDropEvent, QImage
from PySide6.QtWidgets import QApplication

from app.bridge import Bridge
from app.chat.image_support import TEXT_ONLY, ImageSupport
from app.store import export_json, export_markdown
from engine import Engine, EngineConfig, image_part
from engine.bench.vision_model import png
from tests.app.gui_fixtures import GREEDY
from tests.app.layout_checks import MINIMUM, sticking_out
from tests.engine.conftest import vision_model  # noqa: F401 (fixture)

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: the llamacpp backend cannot run")

ASK = "What is in this picture?"
REPLY_TIMEOUT = 30_000


@pytest.fixture(scope="module")
def vision(vision_model):  # noqa: F811
    engine = Engine.load(str(vision_model), EngineConfig(backend="llamacpp", max_context=1024, max_sessions=4))
    yield engine
    engine.close()


@pytest.fixture
def bridge(qapp, vision, tmp_path, monkeypatch):
    monkeypatch.setenv("CONFAB_HOME", str(tmp_path / "home"))
    b = Bridge(params=GREEDY)
    b.attach_engine(vision)
    yield b
    b.close()


def _window(qtbot, bridge, engine):
    from app.window.main_window import MainWindow

    w = MainWindow(bridge)
    qtbot.addWidget(w)
    w.show()
    w.set_state("ready", "ready")
    w.set_model(engine.model.name, engine.backend, engine.device, engine.capacity, engine.max_context)
    w.set_images(ImageSupport.of(engine))
    return w


@pytest.fixture
def window(qtbot, bridge, vision):
    return _window(qtbot, bridge, vision)


@pytest.fixture
def clipboard(qapp):
    """The clipboard, emptied after the test (Qt's offscreen clipboard crashed the process at exit
    while it still held mime data)."""
    board = QApplication.clipboard()
    yield board
    board.clear()
    qapp.processEvents()


def _image_mime(seed: int = 1) -> QMimeData:
    mime = QMimeData()
    mime.setImageData(QImage.fromData(png(64, 48, seed=seed)))
    return mime


def _ready_chips(qtbot, tray, count: int = 1):
    qtbot.waitUntil(lambda: len(tray.drafts) == count and all(d.chip.state != "reading" for d in tray.drafts),
                    timeout=10_000)
    return [d.chip for d in tray.drafts]


def _send_and_wait(qtbot, window, text: str) -> None:
    before = len(window.chat_view.message_views())
    window.composer.setPlainText(text)
    window.composer.submit()
    qtbot.waitUntil(lambda: window.current_id is not None and not window.bridge.replying()
                    and len(window.chat_view.message_views()) == before + 2
                    and window.chat_view.message_views()[-1].shown.id is not None
                    and window.chat_view.message_views()[-1].shown.status != "streaming", timeout=REPLY_TIMEOUT)


def _on_store(qtbot, bridge, fn):
    out = []
    bridge.run(fn).success(out.append)
    qtbot.waitUntil(lambda: bool(out), timeout=REPLY_TIMEOUT)
    return out[0]


def _drop(widget, *paths: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    assert widget.file_drop.eventFilter(widget, enter) and enter.isAccepted()
    drop = QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                      Qt.KeyboardModifier.NoModifier)
    assert widget.file_drop.eventFilter(widget, drop)


def test_paste_send_restart_export(qtbot, window, vision, clipboard, tmp_path):
    assert window.images_label.text() == "Sees images" and "mmproj-model.gguf" in window.images_label.toolTip()
    clipboard.setMimeData(_image_mime())
    window.composer.setFocus()
    window.composer.paste()
    assert window.composer.toPlainText() == "", "attached, not typed"
    (chip,) = _ready_chips(qtbot, window.chat.files.tray)
    (draft,) = window.chat.files.tray.attachments()
    tokens = ImageSupport.of(vision).count(draft.data)
    assert tokens > 16, "the image's 16 positions and the model's markers around them"
    assert chip.label.text() == f"Pasted image.png · 64×48 · {tokens} tokens"
    assert not chip.icon.pixmap().isNull(), "a thumbnail"
    assert QImage.fromData(draft.data).pixelColor(5, 7) == QImage.fromData(png(64, 48, seed=1)).pixelColor(5, 7)

    _send_and_wait(qtbot, window, ASK)
    cid = window.current_id
    user, reply = window.chat_view.message_views()
    assert reply.shown.status == "complete"
    with vision.open_session() as session:  # the model read the image: its reply is the engine's own for it
        expected = session.chat([{"role": "user", "content": [image_part(draft.data), {"type": "text", "text": ASK}]}],
                                GREEDY).text()
    assert reply.shown.content == expected
    stored = _on_store(qtbot, window.bridge, lambda store: store.messages(cid)[0].attachments)
    assert [(a.name, a.media_type, a.data, a.tokens) for a in stored] == [
        ("Pasted image.png", "image/png", draft.data, tokens)]
    assert QImage.fromData(stored[0].thumbnail).size() == QSize(64, 48), "its thumbnail is stored beside it"

    # A restart: a new window on the same data folder shows the image, and the conversation goes on
    # with the image read back from the database.
    window.bridge.close()
    again = Bridge(tmp_path / "home", params=GREEDY)
    again.attach_engine(vision)
    try:
        restarted = _window(qtbot, again, vision)
        restarted.show_conversation(cid)
        qtbot.waitUntil(lambda: len(restarted.chat_view.message_views()) == 2, timeout=REPLY_TIMEOUT)
        files = restarted.chat_view.message_views()[0].files
        (shown,) = files.chips
        assert shown.text() == f"Pasted image.png · 64×48 · {tokens} tokens" and not shown.icon().isNull()
        restarted.resize(*MINIMUM)
        qtbot.wait(50)  # layouts settle
        assert restarted.width() == MINIMUM[0] and sticking_out(restarted.chat_view) == []
        shown.click()  # view it large
        assert files.viewer.image.size() == QSize(64, 48) and files.viewer.isVisible()
        assert not files.viewer.picture.pixmap().isNull()
        files.viewer.close()
        _send_and_wait(qtbot, restarted, "And its colours?")
        assert restarted.chat_view.message_views()[-1].shown.status == "complete"

        exported, markdown = _on_store(qtbot, again, lambda store: (export_json(store, cid), export_markdown(store, cid)))
        (a,) = json.loads(exported)["messages"][0]["attachments"]
        assert (base64.b64decode(a["data_base64"]), a["width"], a["height"], a["tokens"]) == (draft.data, 64, 48, tokens)
        assert f"![Pasted image.png](data:image/png;base64,{base64.b64encode(draft.data).decode()})" in markdown
    finally:
        again.close()


def test_a_text_model_refuses_an_image_before_send(qtbot, window, vision_model, tmp_path):  # noqa: F811
    text_only = Engine.load(str(vision_model), EngineConfig(backend="llamacpp", max_context=1024, mmproj=""))
    try:
        window.set_images(ImageSupport.of(text_only))
    finally:
        text_only.close()
    assert window.images_label.text() == "", "the status bar says nothing of images for a text model"
    path = tmp_path / "tram.png"
    path.write_bytes(png(64, 48, seed=2))
    window.chat.files.tray.add_paths([path])
    (chip,) = _ready_chips(qtbot, window.chat.files.tray)
    assert chip.label.text() == "tram.png · 64×48 · image", "a text model cannot count it"
    window.composer.setPlainText(ASK)
    window.composer.submit()
    qtbot.wait(200)
    assert window.current_id is None and not window.chat_view.message_views(), "nothing was sent"
    assert window.composer.toPlainText() == ASK and len(window.chat.files.tray.drafts) == 1, "nothing was dropped"
    words = f"tram.png is an image, and {TEXT_ONLY}"
    assert TEXT_ONLY == "this model reads text only; load a vision model with its mmproj file"
    assert window.notices.text.startswith(words) and window.chat.files.why.text().startswith(words)


def test_dropped_and_picked_images_are_chips_and_a_large_photo_is_scaled(qtbot, window, vision, tmp_path, monkeypatch):
    import app.chat.composer_files

    small = tmp_path / "tram.png"
    small.write_bytes(png(64, 48, seed=2))
    photo = QImage(3000, 2000, QImage.Format.Format_RGB32)
    photo.fill(QColor("#3a7bd5"))
    big = tmp_path / "harbour.jpg"
    assert photo.save(str(big), "JPEG", 80)
    _drop(window, small)
    monkeypatch.setattr(app.chat.composer_files, "open_files", lambda parent, caption, filters: [big])
    window.chat.files.button.click()
    chips = _ready_chips(qtbot, window.chat.files.tray, 2)
    sent_small, sent_big = window.chat.files.tray.attachments()
    count = ImageSupport.of(vision).count
    assert [c.label.text() for c in chips] == [
        f"tram.png · 64×48 · {count(sent_small.data)} tokens",
        f"harbour.jpg · 3000×2000 → 2048×1365 · {count(sent_big.data)} tokens"]
    assert sent_small.data == small.read_bytes(), "a PNG the model reads is sent as it is"
    assert (sent_big.media_type, QImage.fromData(sent_big.data).size(), sent_big.scaled_from, sent_big.size) == (
        "image/jpeg", QSize(2048, 1365), (3000, 2000), big.stat().st_size)
    assert "scaled down as the model's preprocessor would" in chips[1].toolTip()
    assert QImage.fromData(sent_big.thumbnail).size() == QSize(128, 85), "a small thumbnail to store"
    assert window.chat.context_meter.files == sent_small.tokens + sent_big.tokens
    window.resize(*MINIMUM)  # the taller chips with thumbnails stay inside the composer's row
    qtbot.wait(50)
    tray = window.chat.files.tray
    assert window.width() == MINIMUM[0]
    assert all(c.mapTo(tray.viewport(), c.rect().topRight()).x() < tray.viewport().width() for c in chips)


def test_an_image_with_text_pastes_as_text(qtbot, window, clipboard):
    mime = _image_mime()
    mime.setText("cells A1:B2")  # a spreadsheet's copy carries a picture of itself
    window.composer.insertFromMimeData(mime)
    assert window.composer.toPlainText() == "cells A1:B2" and not window.chat.files.tray.drafts


def test_the_quick_chat_takes_a_pasted_image(qtbot, bridge, vision, clipboard):
    from app.quick.quick_chat import QuickChat

    quick = QuickChat(bridge)
    qtbot.addWidget(quick)
    quick.set_ready(True)
    quick.context_limit = vision.max_context
    quick.files.set_images(ImageSupport.of(vision))
    with qtbot.waitActive(quick):
        quick.show_near(None)
    clipboard.setMimeData(_image_mime(seed=3))
    qtbot.keyClick(quick.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert quick.input.text() == ""
    qtbot.waitUntil(lambda: len(quick.files.attachments()) == 1, timeout=10_000)
    (sent,) = quick.files.attachments()
    qtbot.keyClicks(quick.input, ASK)
    with qtbot.waitSignal(quick.reply_finished, timeout=REPLY_TIMEOUT) as blocker:
        qtbot.keyClick(quick.input, Qt.Key.Key_Return)
    assert quick.question_files == ("Pasted image.png",)
    user = _on_store(qtbot, bridge, lambda store: store.messages(blocker.args[0])[0])
    assert [(a.name, a.data) for a in user.attachments] == [("Pasted image.png", sent.data)]
