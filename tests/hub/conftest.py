"""Fixtures for the Get-models tests: a fake Hub on a loopback port, an empty Hub cache per test."""

from __future__ import annotations

import pytest

from tests.hub.fake_hub import FakeHub, Repo, running

GGUF_BYTES = b"GGUF" + bytes(range(256)) * 4096  # ~1 MB of stand-in data: listed and downloaded, never loaded


@pytest.fixture
def hub(tmp_path, monkeypatch, tiny_models):
    """The fake Hub with: a tiny safetensors model, a GGUF repo, a gated repo and a repo without weights.
    HF_ENDPOINT and the cache point at test-owned places; no test touches the internet."""
    import huggingface_hub.constants as constants

    fake = FakeHub()
    fake.add_folder("test-org/tiny-llama", tiny_models["llama"])
    fake.repos["test-org/tiny-GGUF"] = Repo({"tiny-Q4_K_M.gguf": GGUF_BYTES, "tiny-Q8_0.gguf": GGUF_BYTES[:600000],
                                             "README.md": b"# tiny"}, ["gguf", "text-generation"], commit="b" * 40)
    fake.repos["test-org/gated-llama"] = Repo({"config.json": b"{}", "model.safetensors": b"x" * 100},
                                              ["safetensors", "text-generation"], gated=True)
    fake.repos["test-org/readme-only"] = Repo({"README.md": b"# nothing"}, ["text-generation"])
    with running(fake):
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setattr(constants, "ENDPOINT", fake.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
        monkeypatch.setattr("engine.models.hub.free_memory", lambda: 8 * 10**9)
        yield fake
