"""Get models keeps its starter list: a failed search says why and leaves the starters listed (they
once vanished, leaving an empty dialog), and an empty search brings them back."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import curated_models  # noqa: E402
from engine.errors import NetworkError  # noqa: E402


def _listed(dialog) -> list[str]:
    return [dialog.repos.topLevelItem(i).text(0) for i in range(dialog.repos.topLevelItemCount())]


def test_a_failed_search_keeps_the_starter_list(qtbot, monkeypatch):
    from app.models import get_models_dialog
    from app.models.get_models_dialog import GetModelsDialog

    def offline(query):
        raise NetworkError("Could not reach Hugging Face: check that this computer is online, then try again.")

    monkeypatch.setattr(get_models_dialog, "search_models", offline)
    dialog = GetModelsDialog()
    qtbot.addWidget(dialog)
    starters = _listed(dialog)
    assert starters == [m["name"] for m in curated_models()] and starters
    dialog.query.setText("qwen")
    dialog.search()
    qtbot.waitUntil(lambda: dialog.search_button.isEnabled(), timeout=10_000)
    assert dialog.status.text().startswith("Search failed.")
    assert _listed(dialog) == starters
    dialog.query.setText("")
    dialog.search()
    assert _listed(dialog) == starters and dialog.status.text() == get_models_dialog.STARTERS_TEXT
    dialog.done(0)
