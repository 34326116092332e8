"""`python -m engine pull REPO[:FILE]`: download a model from Hugging Face with a progress bar.

Without FILE: the safetensors folder if the repo has one, else a Q4_K_M-like GGUF; a GGUF comes with the
vision projector (mmproj) beside it in the repo, so the model reads images. Ctrl-C pauses;
running the same command again resumes where it stopped.
"""

from __future__ import annotations

import sys

from ..errors import DownloadError, DownloadStopped
from ..models.hub import default_option, parse_repo, repo_options
from ..models.hub_download import Download


def run_pull(args) -> int:
    spec: str = args.spec
    repo = parse_repo(spec)
    file = spec.split(":", 1)[1] if ":" in spec and "://" not in spec else None
    try:
        if file:  # with its vision projector where the repo has one beside it
            files = [file] + ([mm] if (mm := _projector_of(repo, file)) else [])
        else:
            option = default_option(repo_options(repo, max_context=args.max_context))
            print(f"{repo}: {option.label}, {option.size_bytes / 1e6:.0f} MB on disk, {option.fit} ({option.reason})",
                  file=sys.stderr)
            files = list(option.files)
        path = _download(repo, files)
    except DownloadStopped:
        print("\npaused: run the same command again to resume", file=sys.stderr)
        return 130
    except DownloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _projector_of(repo: str, file: str):
    """The mmproj file `repo_options` pairs with `file`; None where it lists none (or cannot list)."""
    try:
        return next((o.mmproj for o in repo_options(repo) if o.files[0] == file), None)
    except DownloadError:
        return None


def _download(repo: str, files: list[str]):
    from tqdm import tqdm

    bar = tqdm(unit="B", unit_scale=True, unit_divisor=1024, desc=repo, file=sys.stderr, dynamic_ncols=True)

    def progress(p) -> None:
        bar.total = p.total
        bar.n = p.done
        bar.set_postfix_str(p.file, refresh=False)
        bar.refresh()

    download = Download(repo, files, progress=progress)
    try:
        return download.run()
    except KeyboardInterrupt:
        raise DownloadStopped(f"{repo}: paused", cancelled=False) from None
    finally:
        bar.close()
