"""A tiny stand-in for the Hugging Face Hub on 127.0.0.1: the API routes and resolve URLs that
huggingface_hub calls (search, model info with file sizes, HEAD/GET with ETag, X-Repo-Commit,
Content-Length and Range), plus faults the tests switch on: cut a transfer mid-file, serve corrupt
bytes, refuse a gated repo with 401, slow down transfers."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse


@dataclass
class Repo:
    files: dict[str, bytes]
    tags: list[str]
    gated: bool = False
    commit: str = "a" * 40
    downloads: int = 100

    def etag(self, name: str) -> str:
        data = self.files[name]
        if name.endswith((".safetensors", ".gguf")):  # LFS: sha256 of the content
            return hashlib.sha256(data).hexdigest()
        return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    cut_after: dict[str, int] = field(default_factory=dict)
    """file name -> bytes to send before dropping the connection (once)."""
    corrupt: set[str] = field(default_factory=set)
    delay_per_chunk: float = 0.0
    served: dict[str, int] = field(default_factory=dict)
    """file name -> body bytes sent by GET, over all requests."""
    starts: list[tuple[str, int]] = field(default_factory=list)
    """(file name, first byte) of every GET of a file."""
    url: str = ""

    def add_folder(self, repo_id: str, folder: Path, tags=("safetensors", "text-generation"), **kw) -> Repo:
        files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        self.repos[repo_id] = Repo(files, list(tags), **kw)
        return self.repos[repo_id]


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _json(self, obj, status=200):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _info(self, repo_id: str, repo: Repo) -> dict:
            siblings = []
            for name, data in repo.files.items():
                s = {"rfilename": name, "size": len(data)}
                if name.endswith((".safetensors", ".gguf")):
                    s["lfs"] = {"sha256": repo.etag(name), "size": len(data), "pointerSize": 130}
                siblings.append(s)
            return {"id": repo_id, "modelId": repo_id, "sha": repo.commit, "tags": repo.tags,
                    "downloads": repo.downloads, "likes": 1, "private": False,
                    "gated": "auto" if repo.gated else False, "siblings": siblings}

        def do_GET(self):
            self._serve(body=True)

        def do_HEAD(self):
            self._serve(body=False)

        def _serve(self, body: bool):
            url = urlparse(self.path)
            path = unquote(url.path)
            if path == "/api/models":
                q = (parse_qs(url.query).get("search") or [""])[0].lower()
                hits = [{"id": r, "modelId": r, "tags": repo.tags, "downloads": repo.downloads, "likes": 1}
                        for r, repo in hub.repos.items() if q in r.lower()]
                return self._json(hits)
            m = re.match(r"^/api/models/([^/]+/[^/]+?)(?:/revision/[^/]+)?$", path)
            if m:
                repo = hub.repos.get(m.group(1))
                if repo is None:
                    return self._not_found()
                return self._json(self._info(m.group(1), repo))
            m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
            if not m or m.group(1) not in hub.repos:
                return self._not_found()
            repo, name = hub.repos[m.group(1)], m.group(3)
            if repo.gated:
                self.send_response(401)
                self.send_header("X-Error-Code", "GatedRepo")
                self.send_header("X-Error-Message", "Access to model is restricted.")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if name not in repo.files:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = repo.files[name]
            if name in hub.corrupt:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            start = 0
            rng = self.headers.get("Range")
            if rng and (rm := re.match(r"bytes=(\d+)-$", rng)):
                start = int(rm.group(1))
            self.send_response(206 if start else 200)
            self.send_header("ETag", f'"{repo.etag(name)}"')
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(data) - start))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if not body:
                return
            hub.starts.append((name, start))
            payload = data[start:]
            limit = hub.cut_after.pop(name, None)
            if limit is not None:
                payload = payload[:limit]
            for i in range(0, len(payload), 65536):
                piece = payload[i:i + 65536]
                try:
                    self.wfile.write(piece)
                except OSError:  # the client stopped reading (pause/cancel)
                    return
                hub.served[name] = hub.served.get(name, 0) + len(piece)
                if hub.delay_per_chunk:
                    time.sleep(hub.delay_per_chunk)
            if limit is not None:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)

        def _not_found(self):
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


class running:
    """Context manager: serve `hub` on a free loopback port; sets hub.url."""

    def __init__(self, hub: FakeHub) -> None:
        self.hub = hub
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
        self.server.daemon_threads = True
        hub.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self.hub

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
