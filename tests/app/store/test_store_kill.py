"""SIGKILL a process mid-reply: every earlier message survives, the partial reply keeps at least
the text flushed before the kill and becomes `interrupted`, and the database checks out."""

import importlib.util
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.store import open_store

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("store_kill_child", HERE / "store_kill_child.py")
child = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(child)


@pytest.mark.parametrize("flush_interval, flushes, extra_delay", [
    (0.25, 1, 0.0),     # right after the first flush
    (0.25, 3, 0.12),    # halfway between two flushes, text buffered but not flushed
    (0.25, 6, 0.24),    # just before the next flush is due
    (0.0, 300, 0.0),    # a commit per chunk: the kill lands on writes in flight
])
def test_kill_mid_reply(tmp_path, flush_interval, flushes, extra_delay):
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, str(HERE / "store_kill_child.py"), str(home), str(flush_interval)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = _lines(proc)
    try:
        _, conversation_id, reply_id = _next(lines, proc).split()
        flushed = 0
        for _ in range(flushes):
            flushed = int(_next(lines, proc).split()[1])
        time.sleep(extra_delay)
    finally:
        proc.kill()  # SIGKILL on POSIX: no cleanup, no atexit, no close
        proc.wait(timeout=10)
    while not lines.empty():  # flushes reported before the kill landed
        line = lines.get()
        if line and line.startswith("FLUSHED"):
            flushed = int(line.split()[1])

    opened = open_store(home)
    store = opened.store
    assert opened.problem is None and opened.interrupted == 1
    assert store.db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    store.db.execute("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check')")  # raises if out of sync

    messages = store.messages(int(conversation_id))
    assert [(m.role, m.content, m.status) for m in messages[:-1]] == [(r, t, "complete") for r, t in child.EARLIER]
    for index, m in enumerate(messages[:-1]):
        if m.role == "assistant":
            assert m.token_ids == tuple(child.earlier_token_ids(index)) and m.stats.completion_tokens == 7
    reply = messages[-1]
    assert (reply.id, reply.role, reply.status) == (int(reply_id), "assistant", "interrupted")
    assert len(reply.content) >= flushed > 0
    assert reply.content == child.reply_prefix(len(reply.content))
    assert store.search("word0")[0].message_id == reply.id
    store.close()


def _lines(proc):
    lines = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _next(lines, proc):
    try:
        line = lines.get(timeout=20)
    except queue.Empty:
        line = None
    if line is None:
        proc.kill()
        raise AssertionError(f"child stopped early: {proc.stderr.read()}")
    return line
