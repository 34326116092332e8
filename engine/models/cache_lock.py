"""One process at a time builds a cache entry; the others wait, then use what it built.

The user cache holds entries built once and read ever after: the bundled model converted to a folder,
a GGUF's config and tokenizer, the tests' tiny vision model. Each is built under a temporary name and
renamed into place, so nobody reads a half-built entry; but two processes that miss the same entry at
once (the app and `engine serve`, or two test workers under pytest-xdist) would build it twice into
that one temporary folder, each deleting the other's work. So a builder holds a lock file beside the
entry, looks again once it has it, and builds only if the entry is still missing:

    build_once(out, done, build)  # build: into a temporary folder, then renamed to out

The lock is an OS file lock (fcntl on POSIX, msvcrt on Windows, through `filelock`), released when
its process ends, so a build that crashed never blocks the next. Entries sit in the cache as
`<cache>/<kind>/<entry>`; their lock files, empty, stay in `<cache>/locks/<kind>-<entry>.lock`, so a
kind's folder holds its entries and nothing else.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


@contextmanager
def building(out: Path) -> Iterator[None]:
    """Hold the lock on building cache entry `out` (`<cache>/<kind>/<entry>`); its kind's folder and the
    locks folder are made if missing."""
    from filelock import FileLock

    out.parent.mkdir(parents=True, exist_ok=True)
    locks = out.parent.parent / "locks"
    locks.mkdir(exist_ok=True)
    with FileLock(str(locks / f"{out.parent.name}-{out.name}.lock")):
        yield


def build_once(out: Path, done: Callable[[], bool], build: Callable[[], None]) -> None:
    """Run `build` unless `done()`; under `out`'s lock, looking again once it is held."""
    if done():
        return
    with building(out):
        if not done():
            build()
