"""The first-start page calls the bundled model a tiny demo and links to Model ▸ Get models…."""

from __future__ import annotations

from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: F401 (fixtures)


def test_first_start_page_links_to_get_models(qtbot, window):
    label = window.chat_view.empty_label
    qtbot.waitUntil(lambda: "tiny demo" in label.text())  # set once the (empty) list has loaded
    assert "href" in label.text()
    with qtbot.waitSignal(window.get_models_requested, timeout=2000):
        label.linkActivated.emit("get-models")
    with qtbot.waitSignal(window.get_models_requested, timeout=2000):
        window.get_models_action.trigger()
    window.set_model("Qwen2.5-0.5B-Instruct", "torch", "cpu")
    assert "tiny demo" not in label.text()
    window.set_model("smollm2-135m-instruct", "torch", "cpu")
    assert "tiny demo" in label.text()
