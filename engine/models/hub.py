"""Find models on Hugging Face that this machine can run, and what each download would cost.

    from engine.models.hub import search, repo_options, curated

    for hit in search("qwen instruct"): print(hit.repo_id)
    for option in repo_options("Qwen/Qwen2.5-0.5B-Instruct", max_context=4096):
        print(option.label, option.size_bytes, option.fit)

Search and file listing go through `huggingface_hub.HfApi` with the endpoint read at call time. The
memory figure before download is an estimate from the Hub's parameter counts (or file sizes) and the
repo's config.json; once downloaded, `engine.estimate_memory` gives the exact figure.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Optional
from urllib.parse import urlsplit

from .. import backends
from ..capacity import DTYPE_BYTES, bytes_per_session
from ..errors import NetworkError, NoWeightsError
from .hub_download import Download, endpoint, free_bytes, hub_cache, translate_http_error

Fit = Literal["fits", "tight", "does not fit"]
_SKIP_GGUF = re.compile(r"(-\d{5}-of-\d{5}\.gguf$)|(^|/)mmproj", re.IGNORECASE)
_FOLDER_FILES = re.compile(r"(^|/)(config\.json|generation_config\.json|tokenizer[^/]*|special_tokens_map\.json|"
                           r"chat_template\.jinja|[^/]*\.safetensors|model\.safetensors\.index\.json|"
                           r"vocab\.json|merges\.txt)$")
# Bits per weight of common GGUF quantizations, to turn a file size into a parameter count.
_GGUF_BPW = {"Q2_K": 2.6, "Q3_K": 3.4, "Q4_0": 4.5, "Q4_1": 5.0, "Q4_K": 4.8, "IQ4": 4.5, "Q5_0": 5.5,
             "Q5_1": 6.0, "Q5_K": 5.6, "Q6_K": 6.6, "Q8_0": 8.5, "F16": 16.0, "BF16": 16.0, "F32": 32.0}


@dataclass(frozen=True)
class Hit:
    """One search result."""

    repo_id: str
    downloads: int
    likes: int
    formats: tuple[str, ...]
    """"gguf", "safetensors", "mlx": what the repo offers that this machine can load."""


@dataclass(frozen=True)
class Option:
    """One thing to download from a repo: a single GGUF file or the whole safetensors folder."""

    repo_id: str
    label: str
    kind: Literal["gguf", "folder"]
    files: tuple[str, ...]
    size_bytes: int
    weights_bytes: int
    bytes_per_session: Optional[int]
    """Estimated state of one session at `max_context`; None when the repo has no config.json."""
    max_context: int
    fit: Fit
    reason: str
    """Why the mark, e.g. "needs 1.2 GB of 6.0 GB free memory"."""
    mmproj: Optional[str] = None
    """A GGUF's vision projector in the same repo folder, downloaded with it (then in `files`), so the
    engine finds it beside the model and the model reads images."""

    @property
    def spec(self) -> str:
        """What `python -m engine pull` accepts for this option."""
        return f"{self.repo_id}:{self.files[0]}" if self.kind == "gguf" else self.repo_id


def curated() -> list[dict]:
    """The hand-picked list shown before any search: [{name, repo, file?, size_bytes, note}]."""
    roots = [Path(getattr(sys, "_MEIPASS", "")), Path(__file__).resolve().parents[2]]
    for root in roots:
        try:
            return json.loads((root / "resources" / "curated_models.json").read_text(encoding="utf-8"))["models"]
        except (OSError, ValueError, KeyError):
            continue
    return []


def parse_repo(text: str) -> str:
    """A repo id from what a person pasted: "org/name", a huggingface.co URL, or "org/name:file"."""
    text = text.strip()
    m = re.match(r"^(?:https?://[^/\s]+|(?:www\.)?(?:hf\.co|huggingface\.co))/([^/\s]+/[^/\s?#]+)", text)
    if m:
        return m.group(1)
    return text.split(":", 1)[0].strip("/")


def _api():
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint())


def runnable_formats(tags: list[str] | None) -> tuple[str, ...]:
    """The formats of a repo (from its tags) that a backend on this machine loads."""
    tags = set(tags or ())
    out = []
    if "gguf" in tags:
        out.append("gguf")
    if "mlx" in tags:
        if backends.default_backend() == "mlx":
            out.append("mlx")
    elif "safetensors" in tags:
        out.append("safetensors")
    return tuple(out)


PROBE_TIMEOUT_S = 4.0
"""How long `reachable` waits for the Hub's address to take a connection."""
_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def reachable(what: str) -> None:
    """Fail in seconds when the Hub cannot be reached at all (offline, its name unknown, nothing
    listening): huggingface_hub retries such errors five times with backoff (~25 s) before giving
    up, while the user watches "Searching…" for nothing. One TCP connect when online. Skipped behind
    a proxy (the connection goes through it, not to the Hub)."""
    if any(os.environ.get(v) for v in _PROXY_VARS):
        return
    parts = urlsplit(endpoint())
    host = parts.hostname or ""
    try:
        socket.create_connection((host, parts.port or (443 if parts.scheme == "https" else 80)),
                                 timeout=PROBE_TIMEOUT_S).close()
    except OSError as e:
        raise NetworkError(f"{what}: the Hugging Face Hub ({host}) cannot be reached ({type(e).__name__}: {e}). "
                           "Check the connection and try again.") from e


def search(query: str, limit: int = 30) -> list[Hit]:
    """Text-generation repos matching `query` that this machine can run, most downloaded first.
    A pasted repo id or URL returns that repo alone (when it exists and is runnable). Raises
    NetworkError within seconds when the Hub cannot be reached."""
    query = query.strip()
    reachable(f"search {query!r}")
    try:
        if "/" in query and " " not in query:
            info = _api().model_info(parse_repo(query))
            fmts = runnable_formats(info.tags)
            return [Hit(info.id, info.downloads or 0, info.likes or 0, fmts)] if fmts else []
        models = _api().list_models(search=query or None, pipeline_tag="text-generation", sort="downloads",
                                    limit=limit * 2)
        hits = []
        for m in models:
            fmts = runnable_formats(m.tags)
            if fmts:
                hits.append(Hit(m.id, m.downloads or 0, m.likes or 0, fmts))
        return hits[:limit]
    except Exception as e:
        raise translate_http_error(e, f"search {query!r}", resumable=False) from e


def repo_options(repo_id: str, max_context: int = 4096, dtype: str = "auto") -> list[Option]:
    """What can be downloaded from `repo_id`, each with size, memory estimate and fit mark.
    Raises NoWeightsError when nothing in the repo is loadable here."""
    repo_id = parse_repo(repo_id)
    reachable(repo_id)
    try:
        info = _api().model_info(repo_id, files_metadata=True)
    except Exception as e:
        raise translate_http_error(e, repo_id, resumable=False) from e
    from .estimate import auto_dtype

    dtype = auto_dtype() if dtype == "auto" else dtype
    files = {s.rfilename: int(s.size or 0) for s in (info.siblings or [])}
    config = _config(repo_id, files)
    per_session = _per_session(config, dtype, max_context)
    params = getattr(getattr(info, "safetensors", None), "total", None)
    formats = runnable_formats(info.tags) or ("safetensors", "gguf")
    options: list[Option] = []
    weights = [f for f in files if f.endswith(".safetensors")]
    if weights and "config.json" in files and ("safetensors" in formats or "mlx" in formats):
        chosen = tuple(sorted(f for f in files if _FOLDER_FILES.search(f) and "/" not in f))
        size = sum(files[f] for f in chosen)
        wsize = sum(files[f] for f in weights)
        weights_bytes = (int(params) * DTYPE_BYTES[dtype] if params and "quantization" not in config else wsize)
        options.append(_option(repo_id, "safetensors (whole folder)", "folder", chosen, size, weights_bytes,
                               per_session, max_context))
    # llama.cpp runs a GGUF as stored (its file's bytes, K/V in float16); torch, where llama.cpp does
    # not load, unpacks the weights into `dtype`
    as_stored = backends.choose("auto", "gguf")[0] == "llamacpp"
    gguf_session = _per_session(config, "float16", max_context) if as_stored else per_session
    for f in sorted(files):
        if f.lower().endswith(".gguf") and not _SKIP_GGUF.search(f):
            mmproj = vision_projector(files, f)
            weights = files[f] + files.get(mmproj, 0) if as_stored else int(files[f] * 8 / _bpw(f) * DTYPE_BYTES[dtype])
            option = _option(repo_id, f, "gguf", (f, mmproj) if mmproj else (f,), files[f] + files.get(mmproj, 0),
                             weights, gguf_session, max_context)
            options.append(replace(option, mmproj=mmproj))
    if not options:
        raise NoWeightsError(f"{repo_id} has no weights this machine can load (no GGUF file and no "
                             "safetensors folder with a config.json)")
    return options


def vision_projector(files: dict[str, int], gguf: str) -> Optional[str]:
    """The `mmproj*.gguf` in `gguf`'s folder of the repo to download with it: a float16 one where the
    repo has several (the projector's own precision, as llama.cpp's converter writes it), else the
    smallest; None for a text-only repo."""
    folder = gguf.rpartition("/")[0]
    found = [f for f in files if f.rpartition("/")[0] == folder and f.rpartition("/")[2].lower().startswith("mmproj")
             and f.lower().endswith(".gguf")]
    return min(found, key=lambda f: ("f16" not in f.lower(), files[f], f)) if found else None


def _bpw(filename: str) -> float:
    upper = filename.upper()
    for key, bits in sorted(_GGUF_BPW.items(), key=lambda kv: -len(kv[0])):
        if key in upper:
            return bits
    return 4.8


def _config(repo_id: str, files: dict[str, int]) -> dict:
    """The repo's config.json (small; fetched into the cache, where the folder download reuses it)."""
    if "config.json" not in files:
        return {}
    try:
        folder = Download(repo_id, ["config.json"]).run()
        return json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except Exception as e:  # the estimate then lacks the per-session figure; the download still works
        import logging

        logging.getLogger(__name__).warning("config.json of %s unreadable: %s", repo_id, e)
        return {}


def _per_session(config: dict, dtype: str, max_context: int) -> Optional[int]:
    if not config:
        return None
    try:
        return bytes_per_session(config, dtype, max_context)
    except (KeyError, TypeError, ValueError):
        return None


def free_memory() -> int:
    """Bytes of memory available for a model now (tests patch this)."""
    import psutil

    return int(psutil.virtual_memory().available)


def fit_mark(need_memory: int, download_bytes: int, memory: Optional[int] = None,
             disk: Optional[int] = None) -> tuple[Fit, str]:
    """fits: under 70% of free memory and disk; tight: under 100%; else does not fit."""
    memory = free_memory() if memory is None else memory
    disk = free_bytes(hub_cache()) if disk is None else disk
    if download_bytes > disk:
        return "does not fit", f"needs {_size(download_bytes)} of disk, {_size(disk)} free"
    if need_memory > memory:
        return "does not fit", f"needs {_size(need_memory)} of memory, {_size(memory)} free"
    reason = f"needs {_size(need_memory)} of {_size(memory)} free memory"
    if need_memory > 0.7 * memory or download_bytes > 0.7 * disk:
        return "tight", reason
    return "fits", reason


def _option(repo_id, label, kind, files, size, weights_bytes, per_session, max_context) -> Option:
    fit, reason = fit_mark(weights_bytes + (per_session or 0), size)
    return Option(repo_id, label, kind, files, size, weights_bytes, per_session, max_context, fit, reason)


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def default_option(options: list[Option]) -> Option:
    """What `pull REPO` takes without a file: the folder, else a Q4_K_M-like GGUF, else the smallest."""
    for o in options:
        if o.kind == "folder":
            return o
    for pref in ("Q4_K_M", "Q4_K", "Q4_0", "Q5_K_M", "Q8_0"):
        for o in options:
            if pref in o.label.upper():
                return o
    return min(options, key=lambda o: o.size_bytes)
