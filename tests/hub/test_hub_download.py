"""The real download code against the fake Hub: search, estimates, progress, resume, checksum,
gated repos, disk full, cancel."""

from __future__ import annotations

import pytest

from app.models.discovery import find_models
from engine.errors import (AccessDeniedError, ChecksumError, DiskFullError, DownloadStopped, NetworkError,
                           NoWeightsError)
from engine.models import hub_download
from engine.models.hub import fit_mark, repo_options, search
from engine.models.hub_download import Download
from tests.hub.conftest import GGUF_BYTES  # noqa: F401 (fixture module)

LLAMA = "test-org/tiny-llama"


def _picker_sources() -> list[str]:
    return [c.source for c in find_models() if c.where == "Hugging Face cache"]


def test_search_lists_runnable_repos_only(hub):
    ids = [h.repo_id for h in search("test-org")]
    assert LLAMA in ids and "test-org/tiny-GGUF" in ids
    assert "test-org/readme-only" not in ids  # nothing loadable
    assert [h.repo_id for h in search(f"{hub.url}/test-org/tiny-GGUF")] == ["test-org/tiny-GGUF"]


def test_repo_options_give_sizes_estimates_and_marks(hub):
    options = repo_options(LLAMA, max_context=1024)
    folder = options[0]
    assert folder.kind == "folder" and "model.safetensors" in folder.files and "config.json" in folder.files
    assert folder.size_bytes == sum(len(hub.repos[LLAMA].files[f]) for f in folder.files)
    assert folder.bytes_per_session > 0 and folder.weights_bytes > 0
    assert folder.fit == "fits"
    ggufs = repo_options("test-org/tiny-GGUF")
    assert [o.label for o in ggufs] == ["tiny-Q4_K_M.gguf", "tiny-Q8_0.gguf"]
    assert ggufs[0].size_bytes == len(GGUF_BYTES) and ggufs[0].spec == "test-org/tiny-GGUF:tiny-Q4_K_M.gguf"


def test_fit_marks():
    assert fit_mark(1, 1, memory=100, disk=100)[0] == "fits"
    assert fit_mark(80, 1, memory=100, disk=100)[0] == "tight"
    assert fit_mark(101, 1, memory=100, disk=100)[0] == "does not fit"
    assert fit_mark(1, 200, memory=100, disk=100)[0] == "does not fit"


def test_no_usable_weights_has_its_own_error(hub):
    with pytest.raises(NoWeightsError):
        repo_options("test-org/readme-only")


def test_download_reports_progress_to_100_and_the_model_loads(hub, backend):
    from engine import Engine, EngineConfig, SamplingParams

    seen = []
    option = repo_options(LLAMA)[0]
    folder = Download(LLAMA, list(option.files), progress=seen.append).run()
    assert seen[-1].done == seen[-1].total == option.size_bytes
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert str(folder) in _picker_sources()
    config = EngineConfig(backend=backend, dtype="float32", max_context=256)
    with Engine.load(str(folder), config) as engine, engine.open_session() as s:
        chunks = list(s.chat([{"role": "user", "content": "Hi"}], SamplingParams(temperature=0, max_tokens=4)))
    assert sum(len(c.token_ids) for c in chunks) > 0


def test_cut_download_resumes_without_fetching_bytes_twice(hub):
    size = len(GGUF_BYTES)
    hub.cut_after["tiny-Q4_K_M.gguf"] = size // 3
    d = lambda: Download("test-org/tiny-GGUF", ["tiny-Q4_K_M.gguf"])  # noqa: E731
    with pytest.raises(NetworkError):
        d().run()
    assert _picker_sources() == []  # the partial file is not offered
    path = d().run()  # a fresh Download: as after an app restart
    assert path.read_bytes() == GGUF_BYTES
    assert hub.served["tiny-Q4_K_M.gguf"] == size
    assert str(path) in _picker_sources()


def test_corrupt_file_is_refused_and_deleted(hub):
    hub.corrupt.add("tiny-Q8_0.gguf")
    with pytest.raises(ChecksumError):
        Download("test-org/tiny-GGUF", ["tiny-Q8_0.gguf"]).run()
    assert _picker_sources() == []
    assert not any(hub_download.repo_folder("test-org/tiny-GGUF").rglob("*.incomplete"))


def test_gated_repo_gives_access_denied(hub):
    with pytest.raises(AccessDeniedError, match="gated"):
        Download("test-org/gated-llama", ["config.json"]).run()


def test_disk_full_is_named_before_downloading(hub, monkeypatch):
    monkeypatch.setattr(hub_download, "free_bytes", lambda path: 1000)
    with pytest.raises(DiskFullError):
        Download("test-org/tiny-GGUF", ["tiny-Q4_K_M.gguf"]).run()
    assert hub.served.get("tiny-Q4_K_M.gguf", 0) == 0


def test_cancel_leaves_nothing_the_picker_offers(hub):
    files = list(repo_options(LLAMA)[0].files)
    hub.delay_per_chunk = 0.01
    holder = {}

    def progress(p):
        if p.file.endswith(".safetensors"):
            holder["d"].cancel()

    holder["d"] = d = Download(LLAMA, files, progress=progress)
    with pytest.raises(DownloadStopped) as info:
        d.run()
    assert info.value.cancelled
    assert _picker_sources() == []
    assert not any(p.name.endswith(".incomplete") for p in hub_download.repo_folder(LLAMA).rglob("*"))


def test_pause_keeps_the_partial_file_and_resumes(hub):
    hub.delay_per_chunk = 0.01
    holder = {}

    def progress(p):
        if p.done > 0:
            holder["d"].pause()

    holder["d"] = d = Download("test-org/tiny-GGUF", ["tiny-Q4_K_M.gguf"], progress=progress)
    with pytest.raises(DownloadStopped) as info:
        d.run()
    assert not info.value.cancelled
    [partial] = hub_download.repo_folder("test-org/tiny-GGUF").rglob("*.incomplete")
    kept = partial.stat().st_size
    assert kept > 0
    hub.delay_per_chunk = 0
    assert Download("test-org/tiny-GGUF", ["tiny-Q4_K_M.gguf"]).run().read_bytes() == GGUF_BYTES
    assert hub.starts[-1] == ("tiny-Q4_K_M.gguf", kept)  # asked only for the missing bytes


def test_pull_command_downloads_with_a_progress_bar(hub, capsys):
    from engine.__main__ import main

    assert main(["pull", "test-org/tiny-GGUF"]) == 0  # no file named: the Q4_K_M one
    out, err = capsys.readouterr()
    assert out.strip().endswith("tiny-Q4_K_M.gguf")
    assert "100%" in err
    assert main(["pull", "test-org/gated-llama:config.json"]) == 1
    assert "gated" in capsys.readouterr().err


def test_a_model_too_big_for_free_memory_is_marked(hub, monkeypatch):
    monkeypatch.setattr("engine.models.hub.free_memory", lambda: 1000)
    option = repo_options(LLAMA)[0]
    assert option.fit == "does not fit" and "memory" in option.reason


def test_disk_filling_up_while_writing_is_named(hub, monkeypatch):
    import errno
    import io

    real_open = open

    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fake_open(path, mode="r", *a, **k):
        return Full() if str(path).endswith(".incomplete") else real_open(path, mode, *a, **k)

    monkeypatch.setattr("builtins.open", fake_open)
    with pytest.raises(DiskFullError, match="disk is full"):
        Download("test-org/tiny-GGUF", ["tiny-Q8_0.gguf"]).run()


def test_a_gguf_on_llama_cpp_needs_its_file_not_unpacked_weights(hub, monkeypatch):
    """llama.cpp runs a GGUF as stored: its weights take the file's bytes (Get models showed a 48 MiB
    Q4_K_M needing more than the 80 MiB Q8_0, as if unpacked to full precision)."""
    from engine import backends

    monkeypatch.setattr(backends, "choose", lambda name, kind: ("llamacpp", "llama.cpp: a GGUF file runs as stored"))
    q4, q8 = repo_options("test-org/tiny-GGUF")
    assert (q4.weights_bytes, q8.weights_bytes) == (len(GGUF_BYTES), 600000)
