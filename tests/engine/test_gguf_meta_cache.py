"""A GGUF's config and tokenizer, read once into the cache, are found again by the file's metadata,
not its path: a file moved, copied or written again the same (the tests' tiny models, each session)
reuses them instead of reading its tokenizer again (seconds) and leaving another copy behind."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("llama_cpp")


def test_a_copied_gguf_reuses_the_metadata_read_from_the_first(tiny_q4_gguf, tmp_path, monkeypatch):
    from engine.models import sources

    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    first = tiny_q4_gguf  # a 1,024-token vocabulary: read in a fraction of the bundled one's time
    copy = tmp_path / "elsewhere" / first.name
    copy.parent.mkdir()
    shutil.copy(first, copy)
    read = []
    real = sources.read_metadata
    monkeypatch.setattr(sources, "read_metadata", lambda path, out: read.append(out.exists()) or real(path, out))
    a = sources.resolve(str(first), as_stored=True)
    b = sources.resolve(str(copy), as_stored=True)
    assert a.tokenizer_folder == b.tokenizer_folder, "one cache entry for the same metadata"
    assert read == [False, True], "read from the first file, found again for its copy"
    assert [p.name for p in (tmp_path / "cache" / "gguf-meta").iterdir()] == [a.tokenizer_folder.name]
    assert a.fingerprint == b.fingerprint and a.path != b.path


def test_other_metadata_is_another_entry(gguf_source, tiny_models, tiny_q4_gguf, tmp_path, monkeypatch):
    from engine.models import sources

    monkeypatch.setenv("CONFAB_CACHE", str(tmp_path / "cache"))
    full = sources.resolve(str(gguf_source(tiny_models["llama"])), as_stored=True)
    small = sources.resolve(str(tiny_q4_gguf), as_stored=True)  # another vocabulary and config
    assert full.tokenizer_folder != small.tokenizer_folder
