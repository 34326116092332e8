"""Model ▸ Get models… against the fake Hub: curated list, search, estimate marks, a download with
progress to 100%, pause/resume and cancel, all with the GUI thread free."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.models.get_models_dialog import GetModelsDialog
from app.models.discovery import find_models
from engine.models.hub_download import repo_folder

LLAMA = "test-org/tiny-llama"


def _dialog(qtbot) -> GetModelsDialog:
    dialog = GetModelsDialog(max_context=512)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def _search_and_pick(qtbot, dialog, repo: str) -> None:
    dialog.query.setText(repo.split("/")[1])
    dialog.search()
    qtbot.waitUntil(lambda: dialog.repos.topLevelItemCount() == 1 and dialog.search_button.isEnabled())
    assert dialog.repos.topLevelItem(0).text(0) == repo
    dialog.repos.setCurrentItem(dialog.repos.topLevelItem(0))
    qtbot.waitUntil(lambda: dialog.files.topLevelItemCount() > 0)


def test_curated_list_is_shown_before_any_search(qtbot, hub):
    dialog = _dialog(qtbot)
    assert dialog.repos.topLevelItemCount() >= 3
    assert "/" in dialog.repos.topLevelItem(0).data(0, Qt.ItemDataRole.UserRole)


def test_download_shows_progress_and_offers_load_now(qtbot, hub):
    dialog = _dialog(qtbot)
    _search_and_pick(qtbot, dialog, LLAMA)
    row = dialog.files.topLevelItem(0)
    assert row.text(0) == "safetensors (whole folder)" and "fits" in row.text(3) and "MiB" in row.text(2)
    hub.delay_per_chunk = 0.005
    seen = []
    dialog.progress.valueChanged.connect(seen.append)
    qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.load_button.isVisible(), timeout=30000)
    assert dialog.progress.value() == 1000 and len(seen) >= 2
    assert "of" in dialog.progress_label.text() or "Downloaded" in dialog.progress_label.text()
    assert dialog.downloaded_source in [c.source for c in find_models()]
    qtbot.mouseClick(dialog.load_button, Qt.MouseButton.LeftButton)
    assert dialog.result() == dialog.DialogCode.Accepted


def test_pause_resume_and_cancel(qtbot, hub):
    dialog = _dialog(qtbot)
    _search_and_pick(qtbot, dialog, "test-org/tiny-GGUF")
    dialog.select_file(0)
    hub.delay_per_chunk = 0.02
    dialog.start_download()
    qtbot.waitUntil(lambda: dialog.progress.value() > 0, timeout=20000)
    assert "MiB" in dialog.progress_label.text() or "KiB" in dialog.progress_label.text()
    dialog.pause()
    qtbot.waitUntil(lambda: dialog.pause_button.text() == "&Resume", timeout=20000)
    dialog.pause()  # resume
    qtbot.waitUntil(lambda: dialog._download is not None)
    dialog.cancel()
    qtbot.waitUntil(lambda: "cancelled" in dialog.progress_label.text(), timeout=20000)
    assert not [c for c in find_models() if c.where == "Hugging Face cache"]
    assert not any(repo_folder("test-org/tiny-GGUF").rglob("*.incomplete"))


def test_cancel_while_paused_removes_the_partial_file(qtbot, hub):
    dialog = _dialog(qtbot)
    _search_and_pick(qtbot, dialog, "test-org/tiny-GGUF")
    hub.delay_per_chunk = 0.02
    dialog.start_download()
    qtbot.waitUntil(lambda: dialog.progress.value() > 0, timeout=20000)
    dialog.pause()
    qtbot.waitUntil(lambda: dialog.pause_button.text() == "&Resume", timeout=20000)
    assert any(repo_folder("test-org/tiny-GGUF").rglob("*.incomplete"))
    dialog.cancel()
    qtbot.waitUntil(lambda: "cancelled" in dialog.progress_label.text(), timeout=20000)
    assert not any(repo_folder("test-org/tiny-GGUF").rglob("*.incomplete"))


def test_gated_and_weightless_repos_say_why(qtbot, hub):
    dialog = _dialog(qtbot)
    dialog.query.setText("test-org/readme-only")
    dialog.search()
    qtbot.waitUntil(lambda: dialog.search_button.isEnabled())
    assert "Nothing found" in dialog.status.text()
    dialog.repos.clear()
    dialog._repo_selected(_item("test-org/readme-only"))
    qtbot.waitUntil(lambda: "no weights" in dialog.status.text())
    _search_and_pick(qtbot, dialog, "test-org/gated-llama")
    dialog.start_download()
    qtbot.waitUntil(lambda: "gated" in dialog.progress_label.text(), timeout=20000)


def _item(repo: str):
    from PySide6.QtWidgets import QTreeWidgetItem

    item = QTreeWidgetItem([repo])
    item.setData(0, Qt.ItemDataRole.UserRole, repo)
    return item
