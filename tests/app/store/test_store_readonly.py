"""A data folder or database file that cannot be written: a named error, and the user's files untouched.

Root can write anywhere, so when the tests run as root the opening is done by a child process
that drops to `nobody` (uid 65534) once its imports are done (the interpreter may live where
nobody cannot read), for whom root-owned 0755/0644 means read-only. Otherwise the files are
chmod-ed read-only for the current user and the child stays that user.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from app.store import open_store

ROOT = Path(__file__).resolve().parents[3]
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
# modes that are writable / read-only for whoever runs the child
DIR_RW, DIR_RO = (0o777, 0o755) if AS_ROOT else (0o755, 0o555)
FILE_RW, FILE_RO = (0o666, 0o644) if AS_ROOT else (0o644, 0o444)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")

CHILD = """
import json, os, sys
from pathlib import Path
from app.store import open_store
if sys.argv[2] == "drop":
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
try:
    opened = open_store(Path(sys.argv[1]))
    print(json.dumps({"error": None, "message": None}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))
"""

FOLDER_MESSAGE = ("Confab cannot write to its data folder {home} (Permission denied). Your conversations were "
                  "not changed. Make it writable, or set CONFAB_HOME to a writable folder.")
FILE_MESSAGE = ("Confab cannot write to its database file {home}/confab.db (read-only). Your conversations "
                "were not changed. Make it writable, or set CONFAB_HOME to a writable folder.")


@pytest.fixture
def base():
    """A folder the unprivileged child can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="confab-ro-"))
    folder.chmod(0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    shutil.rmtree(folder)


def _with_data(home):
    with open_store(home).store as store:
        c = store.create_conversation("precious")
        store.append_message(c.id, "user", "do not lose me")


def _folder_read_only(home):
    _with_data(home)
    (home / "confab.db").chmod(FILE_RW)
    home.chmod(DIR_RO)


def _file_read_only(home):
    _with_data(home)
    (home / "confab.db").chmod(FILE_RO)
    home.chmod(DIR_RW)


def _empty_read_only_folder(home):
    home.mkdir()
    home.chmod(DIR_RO)


def _missing_folder_in_read_only_parent(home):
    home.parent.chmod(DIR_RO)


def _damaged_file_in_read_only_folder(home):
    home.mkdir()
    (home / "confab.db").write_bytes(b"not a database " * 50)
    (home / "confab.db").chmod(FILE_RW)
    home.chmod(DIR_RO)


@pytest.mark.parametrize("setup, message", [
    (_folder_read_only, FOLDER_MESSAGE),
    (_file_read_only, FILE_MESSAGE),
    (_empty_read_only_folder, FOLDER_MESSAGE),
    (_missing_folder_in_read_only_parent, FOLDER_MESSAGE),
    (_damaged_file_in_read_only_folder, FOLDER_MESSAGE),
])
def test_read_only_data_folder(base, setup, message):
    parent = base / "parent"
    parent.mkdir(mode=0o755)
    home = parent / "home"
    setup(home)
    before = _snapshot(base)

    result = _open_in_child(home)

    assert result == {"error": "StoreReadOnlyError", "message": message.format(home=home)}
    assert _snapshot(base) == before  # no file created, changed, moved or deleted
    if setup in (_folder_read_only, _file_read_only):  # and once writable again, all is there
        home.chmod(0o755)
        (home / "confab.db").chmod(0o644)
        with open_store(home).store as store:
            [c] = store.list_conversations()
            assert [m.content for m in store.messages(c.id)] == ["do not lose me"]


def _open_in_child(home):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    drop = "drop" if AS_ROOT else "stay"
    out = subprocess.run([sys.executable, "-c", CHILD, str(home), drop], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _snapshot(folder):
    """Every path under folder with its mode, size, mtime and content hash."""
    shot = {}
    for path in sorted(folder.rglob("*")):
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        shot[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return shot
