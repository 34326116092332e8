"""Download files of a Hugging Face repo into the Hub cache, resumable across restarts.

    d = Download("HuggingFaceTB/SmolLM2-360M-Instruct", ["config.json", "model.safetensors", ...],
                 progress=lambda p: print(p.fraction))
    folder = d.run()        # raises DownloadStopped after d.pause() / d.cancel() from another thread

huggingface_hub supplies the URLs, the auth headers (token for gated repos), the HTTP client and its
error classes, and we keep its cache layout (blobs/, snapshots/<commit>/, refs/) so every tool and the
model picker find the files. The transfer itself is hand-written because huggingface_hub 2.x writes to
a process-unique temporary file and deletes it on failure: a cut connection or an app restart would
fetch the whole file again. Here the partial file is `blobs/<etag>.incomplete` and the next run resumes
it with a Range request. Files appear in snapshots/ only once every file of the download is complete and
checksummed, so the picker never offers a half-written model.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..errors import (AccessDeniedError, ChecksumError, DiskFullError, DownloadError, DownloadStopped,
                      NetworkError, RepoNotFoundError)

CHUNK = 1 << 20


@dataclass(frozen=True)
class Progress:
    """Where a download stands; `rate` in bytes/s, `eta_s` None until a rate is known."""

    done: int
    total: int
    rate: float
    eta_s: Optional[float]
    file: str

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


@dataclass(frozen=True)
class RemoteFile:
    """One file of a repo as the Hub reports it (HEAD on its resolve URL)."""

    name: str
    size: int
    etag: str
    commit: str
    url: str


def endpoint() -> str:
    """The Hub address: $HF_ENDPOINT read now (huggingface_hub freezes it at import), else the Hub."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hub_cache() -> Path:
    """The Hub cache folder, read from the environment at call time ($HF_HUB_CACHE, $HF_HOME/hub)."""
    if hub := os.environ.get("HF_HUB_CACHE"):
        return Path(hub).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    return Path(home).expanduser() / "hub"


def repo_folder(repo_id: str, cache: Optional[Path] = None) -> Path:
    return (cache or hub_cache()) / ("models--" + repo_id.replace("/", "--"))


def free_bytes(path: Path) -> int:
    """Free disk bytes where `path` lives (tests patch this to simulate a full disk)."""
    path.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(path).free


def translate_http_error(e: Exception, what: str, resumable: bool = True) -> DownloadError:
    """Map huggingface_hub / httpx errors to the engine's named download errors. `resumable`: a
    download (its partial file is kept), not a search or a listing, which has nothing to resume."""
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    if isinstance(e, DownloadError):
        return e
    status = getattr(getattr(e, "response", None), "status_code", None)
    if isinstance(e, GatedRepoError) or status in (401, 403):
        return AccessDeniedError(f"{what}: access denied ({status}). The repo is gated or private: accept its "
                                 "terms on huggingface.co and set a token (HF_TOKEN or `hf auth login`).")
    if isinstance(e, RepositoryNotFoundError) or status == 404:
        return RepoNotFoundError(f"{what}: not found on the Hub.")
    if isinstance(e, HfHubHTTPError):
        return DownloadError(f"{what}: the Hub answered {status}: {e}")
    if _is_network(e):
        again = "; the download resumes where it stopped." if resumable else "."
        return NetworkError(f"{what}: network error ({type(e).__name__}: {e}). Check the connection and "
                            f"try again{again}")
    return DownloadError(f"{what}: {type(e).__name__}: {e}")


def _is_network(e: Exception) -> bool:
    # By class name: huggingface_hub's HTTP client package (httpx or its fork) varies by version.
    names = {c.__name__ for c in type(e).__mro__}
    return bool(names & {"TransportError", "TimeoutException"}) or isinstance(e, (ConnectionError, TimeoutError))


def file_info(repo_id: str, filename: str, revision: str = "main", token=None) -> RemoteFile:
    """HEAD one file: size, etag (sha256 for LFS files, git sha1 otherwise) and the commit it resolves to."""
    from urllib.parse import quote

    from huggingface_hub import get_hf_file_metadata

    # Built here, not with hf_hub_url: that one starts from a template frozen at import time.
    url = f"{endpoint()}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(filename)}"
    try:
        meta = get_hf_file_metadata(url, token=token, endpoint=endpoint())
    except Exception as e:
        raise translate_http_error(e, f"{repo_id}/{filename}") from e
    if not meta.etag or not meta.commit_hash or meta.size is None:
        raise DownloadError(f"{repo_id}/{filename}: the server did not send an ETag, commit or size")
    return RemoteFile(filename, int(meta.size), meta.etag, meta.commit_hash, url)


class Download:
    """Fetch `files` of `repo_id` into the Hub cache; `run()` blocks, `pause()`/`cancel()` may be
    called from any thread. Returns the snapshot folder (a safetensors model) or the single file."""

    def __init__(self, repo_id: str, files: list[str], progress: Optional[Callable[[Progress], None]] = None,
                 revision: str = "main", token=None, cache: Optional[Path] = None) -> None:
        if not files:
            raise DownloadError("nothing to download")
        self.repo_id, self.files, self.revision, self.token = repo_id, list(files), revision, token
        self.cache = cache or hub_cache()
        self._progress = progress
        self._stop: Optional[bool] = None  # None running, False pause, True cancel
        self._lock = threading.Lock()

    def pause(self) -> None:
        """Stop soon, keeping the partial file; the next `run()` (even after a restart) resumes it."""
        with self._lock:
            if self._stop is None:
                self._stop = False

    def cancel(self) -> None:
        """Stop soon and remove what this download wrote that is not yet a complete model."""
        with self._lock:
            self._stop = True

    def run(self) -> Path:
        remote = [file_info(self.repo_id, f, self.revision, self.token) for f in self.files]
        commit = remote[0].commit
        repo = repo_folder(self.repo_id, self.cache)
        blobs = repo / "blobs"
        blobs.mkdir(parents=True, exist_ok=True)
        total = sum(r.size for r in remote)
        have = {r.etag: self._have(blobs, r) for r in remote}
        needed = sum(r.size - have[r.etag] for r in remote)
        if needed > free_bytes(blobs):
            raise DiskFullError(f"{self.repo_id}: needs {_gb(needed)} more disk space, "
                                f"{_gb(free_bytes(blobs))} free in {self.cache}")
        meter = _Meter(total, sum(have.values()), self._progress)
        existed = {r.etag for r in remote if (blobs / r.etag).exists()}
        try:
            for r in remote:
                self._fetch(blobs, r, meter)
        except DownloadStopped as e:
            if e.cancelled:
                for r in remote:
                    (blobs / f"{r.etag}.incomplete").unlink(missing_ok=True)
                    if r.etag not in existed:
                        (blobs / r.etag).unlink(missing_ok=True)
            raise
        snapshot = repo / "snapshots" / commit
        for r in remote:  # only now: the picker sees the model complete or not at all
            _link(blobs / r.etag, snapshot / r.name)
        (repo / "refs").mkdir(exist_ok=True)
        if not self.revision or len(self.revision) != 40:
            (repo / "refs" / (self.revision or "main")).write_text(commit)
        meter.finish()
        # a GGUF (with its vision projector after it, or not): the model file; else the folder
        return snapshot / remote[0].name if remote[0].name.endswith(".gguf") else snapshot

    def _have(self, blobs: Path, r: RemoteFile) -> int:
        if (blobs / r.etag).exists():
            return r.size
        part = blobs / f"{r.etag}.incomplete"
        size = part.stat().st_size if part.exists() else 0
        if size > r.size:
            part.unlink()
            return 0
        return size

    def _check_stop(self) -> None:
        with self._lock:
            stop = self._stop
        if stop is not None:
            raise DownloadStopped(f"{self.repo_id}: download {'cancelled' if stop else 'paused'}", cancelled=stop)

    def _fetch(self, blobs: Path, r: RemoteFile, meter: "_Meter") -> None:
        """Bring blobs/<etag> into being: resume the .incomplete file, verify, rename."""
        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

        final = blobs / r.etag
        if final.exists():
            return
        part = blobs / f"{r.etag}.incomplete"
        self._check_stop()
        start = part.stat().st_size if part.exists() else 0
        headers = build_hf_headers(token=self.token)
        headers["Accept-Encoding"] = "identity"
        if start:
            headers["Range"] = f"bytes={start}-"
        meter.file = r.name
        try:
            with get_session().stream("GET", r.url, headers=headers, follow_redirects=True, timeout=30) as resp:
                hf_raise_for_status(resp)
                if start and resp.status_code != 206:  # server ignored the Range: start over
                    meter.add(-start)
                    start = 0
                with open(part, "r+b" if start else "wb") as f:
                    f.seek(start)
                    f.truncate()
                    for chunk in resp.iter_bytes():  # as received: a cut keeps every byte read
                        f.write(chunk)
                        meter.add(len(chunk))
                        self._check_stop()
        except DownloadStopped:
            raise
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise DiskFullError(f"{self.repo_id}/{r.name}: the disk is full; free some space and "
                                    "try again (the download resumes)") from e
            raise translate_http_error(e, f"{self.repo_id}/{r.name}") from e
        except Exception as e:
            raise translate_http_error(e, f"{self.repo_id}/{r.name}") from e
        if part.stat().st_size != r.size:
            raise NetworkError(f"{self.repo_id}/{r.name}: the connection ended early "
                               f"({part.stat().st_size} of {r.size} bytes); try again to resume")
        if not _checksum_ok(part, r):
            part.unlink()
            raise ChecksumError(f"{self.repo_id}/{r.name}: the downloaded file does not match the Hub's "
                                "checksum and was deleted; try again")
        os.replace(part, final)


def _checksum_ok(path: Path, r: RemoteFile) -> bool:
    """LFS files: the ETag is the sha256 of the content; small files: the git blob sha1."""
    etag = r.etag.strip('"').removeprefix("W/").strip('"')
    if len(etag) == 64:
        h = hashlib.sha256()
    elif len(etag) == 40:
        h = hashlib.sha1(f"blob {r.size}\0".encode())
    else:
        return True  # an ETag we cannot check (not the Hub's form)
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest() == etag


def _link(blob: Path, dest: Path) -> None:
    """snapshots/<commit>/<file> -> ../../blobs/<etag> as the Hub cache does; a copy where links fail."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_symlink() or dest.exists():
        dest.unlink()
    try:
        dest.symlink_to(os.path.relpath(blob, dest.parent))
    except OSError:
        shutil.copyfile(blob, dest)


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


class _Meter:
    """Counts bytes and reports `Progress` with a smoothed rate, at most ~10 times a second."""

    def __init__(self, total: int, done: int, callback: Optional[Callable[[Progress], None]]) -> None:
        self.total, self.done, self.callback = total, done, callback
        self.file = ""
        self._t0 = self._last = time.monotonic()
        self._base = done
        self.rate = 0.0

    def add(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            elapsed = now - self._t0
            self.rate = (self.done - self._base) / elapsed if elapsed > 0 else 0.0
            self._emit()

    def finish(self) -> None:
        self.done = self.total
        self._emit()

    def _emit(self) -> None:
        if self.callback:
            eta = (self.total - self.done) / self.rate if self.rate > 0 else None
            self.callback(Progress(self.done, self.total, self.rate, eta, self.file))
