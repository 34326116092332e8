"""Two processes that miss the same cache entry at once (two test workers, the app beside `engine
serve`) build it once: the second waits on the first's lock, then reads what it built
(engine/models/cache_lock.py). Without the lock both built into one `.partial` folder, each deleting
the other's files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BUILD_ONCE = """
import os, sys, time
from pathlib import Path
from engine.models.cache_lock import building

out, log, go = map(Path, sys.argv[1:4])
while not go.exists():  # both processes start, then race for the entry
    time.sleep(0.005)
if not (out / "done").exists():
    with building(out):
        if not (out / "done").exists():
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\\n")
            time.sleep(0.5)  # a slow build: the other process arrives meanwhile
            tmp = out.with_name(out.name + ".partial")
            tmp.mkdir()
            (tmp / "done").write_text("built")
            tmp.rename(out)
print((out / "done").read_text())
"""


def _together(args: list[list[str]], go: Path, env: dict | None = None) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-c", *a], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                                        **(env or {})},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in args]
    go.write_text("go")
    done = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def test_two_processes_build_one_entry_once(tmp_path):
    out, log, go = tmp_path / "cache" / "models" / "entry", tmp_path / "builds.log", tmp_path / "go"
    runs = _together([[BUILD_ONCE, str(out), str(log), str(go)]] * 2, go)
    assert [(r.returncode, r.stdout.strip()) for r in runs] == [(0, "built"), (0, "built")], [r.stderr for r in runs]
    assert len(log.read_text().splitlines()) == 1, "built by one process; the other waited and read it"
    assert sorted(p.name for p in (tmp_path / "cache" / "models").iterdir()) == ["entry"]  # no .partial left
    assert [p.name for p in (tmp_path / "cache" / "locks").iterdir()] == ["models-entry.lock"]


READ_METADATA = """
import sys, time
from pathlib import Path
from engine.models import sources

gguf, go = sys.argv[1], Path(sys.argv[2])
while not go.exists():
    time.sleep(0.005)
print(sources.resolve(gguf, as_stored=True).tokenizer_folder)
"""


def test_two_processes_read_one_ggufs_metadata_at_once(tiny_q4_gguf, tmp_path):
    pytest.importorskip("llama_cpp")
    go = tmp_path / "go"
    runs = _together([[READ_METADATA, str(tiny_q4_gguf), str(go)]] * 2, go, env={"CONFAB_CACHE": str(tmp_path / "cache")})
    assert [r.returncode for r in runs] == [0, 0], [r.stderr[-2000:] for r in runs]
    folders = {r.stdout.strip().splitlines()[-1] for r in runs}
    assert len(folders) == 1
    assert [p.name for p in (tmp_path / "cache" / "gguf-meta").iterdir()] == [Path(folders.pop()).name]
