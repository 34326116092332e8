"""Top-k, min-p, the penalties and their window: set as app defaults in Settings, per conversation
in its settings (and its presets), and carried into every reply."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.bridge import Send  # noqa: E402
from app.settings.app_settings import AppSettings, load_settings, sampling_params, save_settings  # noqa: E402
from app.settings.conversation_settings import ConversationSettingsDialog  # noqa: E402
from app.settings.dialog import SettingsDialog  # noqa: E402
from app.settings.presets import Preset, load_presets, save_preset  # noqa: E402
from tests.app.gui_fixtures import bridge, gui_engine  # noqa: E402,F401 (fixtures)
from tests.app.settings.test_gui_settings import conversation, tick  # noqa: E402

NEW = {"top_k": 20, "min_p": 0.1, "repetition_penalty": 1.25, "repeat_last_n": 256, "presence_penalty": 0.5,
       "frequency_penalty": -0.3}


def test_the_defaults_are_edited_in_settings_and_survive_a_restart(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    for key, value in NEW.items():
        dialog.sampling[key].setValue(value)
    edited = dialog.result_settings()
    assert {key: getattr(edited, key) for key in NEW} == NEW
    save_settings(tmp_path, edited)
    assert load_settings(tmp_path) == edited
    params = sampling_params({}, load_settings(tmp_path))
    assert {key: getattr(params, key) for key in NEW} == NEW


def test_off_and_all_read_as_words(qtbot, tmp_path):
    dialog = SettingsDialog(AppSettings(top_k=0, min_p=0.0, repeat_last_n=-1), tmp_path, tray_available=True)
    qtbot.addWidget(dialog)
    assert [dialog.sampling[k].text() for k in ("top_k", "min_p", "repeat_last_n")] == ["Off", "Off", "All"]
    assert (dialog.result_settings().top_k, dialog.result_settings().repeat_last_n) == (0, -1)


def test_a_conversation_overrides_only_the_values_it_unticks(qtbot):
    dialog = ConversationSettingsDialog(conversation(sampling={"repetition_penalty": 1.3, "top_k": 0}),
                                        AppSettings(top_k=40, presence_penalty=0.0))
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.use_default["top_k"].text() == "Use default (40)"
    assert not dialog.use_default["top_k"].isChecked() and dialog.spins["top_k"].text() == "Off"
    assert dialog.use_default["presence_penalty"].isChecked() and not dialog.spins["presence_penalty"].isEnabled()
    assert dialog.result()[1] == {"repetition_penalty": 1.3, "top_k": 0}
    tick(qtbot, dialog.use_default["presence_penalty"])
    dialog.spins["presence_penalty"].setValue(9)  # past the range: held at its end
    assert dialog.result()[1] == {"repetition_penalty": 1.3, "top_k": 0, "presence_penalty": 2.0}


def test_presets_keep_the_penalties(qtbot, tmp_path):
    save_preset(tmp_path, "No loops", Preset("", NEW))
    assert load_presets(tmp_path)["No loops"].sampling == NEW
    dialog = ConversationSettingsDialog(conversation(), AppSettings(), home=tmp_path)
    qtbot.addWidget(dialog)
    dialog.presets.choose("No loops")
    assert dialog.result()[1] == NEW


@pytest.mark.parametrize("own, expected", [
    ({"top_k": 5, "frequency_penalty": 0.4}, (5, 0.4, 1.1)),
    ({"top_k": -4, "frequency_penalty": 7, "repetition_penalty": "high"}, (40, 0.0, 1.1)),  # bad: defaults
])
def test_a_conversations_values_over_the_defaults(own, expected):
    params = sampling_params(own, AppSettings(top_k=40, frequency_penalty=0.0, repetition_penalty=1.1))
    assert (params.top_k, params.frequency_penalty, params.repetition_penalty) == expected
    params.validate()


def _reply(qtbot, bridge, sampling: dict, text: str) -> str:
    ids, done = [], []
    bridge.run(lambda store: store.create_conversation(sampling=sampling).id).success(ids.append)
    qtbot.waitUntil(lambda: bool(ids))
    Send(bridge, ids[0], text).success(done.append).run()
    qtbot.waitUntil(lambda: bool(done), timeout=20_000)
    return done[0].text


def test_a_conversations_top_k_and_penalties_reach_its_replies(qtbot, bridge):
    # the conversation's own values over bridge.params (greedy, 12 tokens past any end token)
    greedy = _reply(qtbot, bridge, {"temperature": 0.0}, "Tell me about the sea")
    assert _reply(qtbot, bridge, {"temperature": 1.5, "top_k": 1}, "Tell me about the sea") == greedy
    # A negative frequency penalty over the whole conversation pulls the tiny model's reply onto its
    # most frequent word; the greedy reply to the same message is other words.
    sea = "sea " * 30
    pulled = {"temperature": 0.0, "frequency_penalty": -2.0, "repeat_last_n": -1}
    assert set(_reply(qtbot, bridge, pulled, sea).split()) == {"sea"}
    assert set(_reply(qtbot, bridge, {"temperature": 0.0}, sea).split()) != {"sea"}


def test_the_conversation_settings_show_every_value_and_fit_a_480_px_screen(qtbot):
    dialog = ConversationSettingsDialog(conversation(), AppSettings())
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.values.verticalScrollBar().maximum() == 0  # at its own size nothing hides
    assert dialog.minimumSizeHint().height() <= 480 - 40  # a title bar and a panel take the rest
    dialog.resize(dialog.width(), dialog.minimumSizeHint().height())
    qtbot.waitUntil(lambda: dialog.values.verticalScrollBar().maximum() > 0)
    dialog.values.ensureWidgetVisible(dialog.context_policy)  # the last row is reached by scrolling
    assert dialog.context_policy.visibleRegion().boundingRect().height() > 0
