"""Load options remembered per model: context length, GPU layers and threads survive a restart,
one model's never become another's, and what the user wrote in the settings file stays."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import EngineConfig  # noqa: E402

from app.models.load_options import LoadOptions, load_options, save_load_options  # noqa: E402
from app.settings.app_settings import AppSettings, load_settings, save_settings  # noqa: E402


def test_a_models_options_come_back_and_reach_its_engine_config(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"")
    assert load_options(tmp_path, str(model)) == LoadOptions()
    assert save_load_options(tmp_path, str(model), LoadOptions(max_context=16384, gpu_layers=0, threads=2))
    link = tmp_path / "link.gguf"
    link.symlink_to(model)
    for way in (str(model), str(link), f"{tmp_path}/./m.gguf"):  # one file, one model, however reached
        assert load_options(tmp_path, way) == LoadOptions(max_context=16384, gpu_layers=0, threads=2)
    config = load_options(tmp_path, str(model)).applied_to(EngineConfig(gpu_layers=12))
    assert (config.max_context, config.gpu_layers, config.threads) == (16384, 0, 2)
    assert load_options(tmp_path, "bundled:smollm2-135m-instruct") == LoadOptions()


def test_auto_keeps_what_the_command_line_asked_for():
    config = LoadOptions(max_context=8192).applied_to(EngineConfig(gpu_layers=20))
    assert (config.max_context, config.gpu_layers, config.threads) == (8192, 20, None)


def test_saving_keeps_every_key_the_file_held(tmp_path):
    save_settings(tmp_path, AppSettings(theme="dark", top_k=7))
    settings = tmp_path / "settings.ini"
    settings.write_text(settings.read_text() + "\n[mine]\nnote=written by hand\n")
    save_load_options(tmp_path, "bundled:x", LoadOptions(max_context=2048))
    key = "bundled:x".encode().hex()
    text = settings.read_text()
    settings.write_text(text.replace('\\"source\\"', '\\"keep\\": 1, \\"source\\"'))  # a key of its own
    save_load_options(tmp_path, "bundled:x", LoadOptions(max_context=4096, threads=1))
    text = settings.read_text()
    assert "note=written by hand" in text and key in text and '\\"keep\\": 1' in text
    assert load_settings(tmp_path).theme == "dark" and load_settings(tmp_path).top_k == 7
    assert load_options(tmp_path, "bundled:x") == LoadOptions(max_context=4096, threads=1)


def test_an_entry_that_does_not_read_is_left_as_it_is(tmp_path):
    key = "bundled:x".encode().hex()
    (tmp_path / "settings.ini").write_text(f"[models]\n{key}=not json\n")
    assert load_options(tmp_path, "bundled:x") == LoadOptions()
    before = (tmp_path / "settings.ini").read_bytes()
    assert not save_load_options(tmp_path, "bundled:x", LoadOptions(max_context=2048))
    assert (tmp_path / "settings.ini").read_bytes() == before


def test_values_out_of_range_are_left_to_the_engine(tmp_path):
    key = "bundled:x".encode().hex()
    (tmp_path / "settings.ini").write_text(
        f'[models]\n{key}="{{\\"max_context\\": 3, \\"gpu_layers\\": -1, \\"threads\\": true}}"\n')
    assert load_options(tmp_path, "bundled:x") == LoadOptions()


def test_a_kv_cache_type_this_version_does_not_know_is_left_to_the_engine(tmp_path):
    save_load_options(tmp_path, "m.gguf", LoadOptions(cache_type_k="q8_0", cache_type_v="q8_0"))
    assert load_options(tmp_path, "m.gguf").cache_type_k == "q8_0"
    save_load_options(tmp_path, "m.gguf", LoadOptions(cache_type_k="iq4_nl", cache_type_v="q8_0"))  # a later version
    assert load_options(tmp_path, "m.gguf").cache_type_k is None
    assert load_options(tmp_path, "m.gguf").cache_type_v == "q8_0"
