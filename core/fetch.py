"""Downloading a dataset's public files (``arena dataset fetch``): resumable, checksummed, one-line errors.

A dataset plugin describes its files by defining two class methods on its component class:

``fetch_description(cls) -> FetchDescription``
    the source and the licence (printed before anything is downloaded);
``fetch(cls, fetcher, dest, task_globs, source) -> str``
    download what the tasks need into ``dest`` with the :class:`Fetcher` (only the tasks matching
    ``task_globs`` when the dataset can tell them apart; ``source`` is a mirror of the default
    location when the user gives one) and return the config lines that use the result.

The :class:`Fetcher` does the transfers. Plain URLs go to ``NAME.part`` first and are resumed with an
HTTP ``Range`` request when the command is run again after an interruption; a file with a known
SHA-256 (given by the source) is checked before it is moved into place and removed if it does not
match. Files on the Hugging Face hub go through ``huggingface_hub`` (its own retries and resume
within a call), then are checked against the hub's SHA-256 (the ETag of a Git LFS file). Network
failures become one :class:`FetchError` line. A progress bar is drawn only when stderr is a
terminal.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.types import PptArenaError

CHUNK = 1 << 16
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class FetchError(PptArenaError):
    """A file could not be fetched (offline, refused, corrupt); the message is one line with the fix."""


@dataclass
class FetchDescription:
    """What a dataset's fetch downloads and under which terms."""

    source: str
    licence: str
    notes: list[str] = field(default_factory=list)


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _inside(root: Path, relative: str) -> Path:
    target = (root / relative).resolve()
    if not target.is_relative_to(root.resolve()):
        raise FetchError(f"refusing to write {relative!r} outside {root}")
    return target


class Fetcher:
    """Downloads files into a folder; counts what it fetched, resumed and found already present."""

    def __init__(self, root: Path, *, progress: bool | None = None, say: Callable[[str], None] | None = None):
        self.root = Path(root).expanduser()
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.say = say or (lambda text: print(text, file=sys.stderr))
        self.fetched = 0
        self.resumed = 0
        self.present = 0
        self.bytes = 0

    # ------------------------------------------------------------------ plain URLs

    def url(self, url: str, relative: str, *, sha256: str | None = None, size: int | None = None) -> Path:
        """Download ``url`` to ``root/relative`` (resuming a ``.part`` left by an interrupted run)."""
        dest = _inside(self.root, relative)
        if dest.is_file() and self._good(dest, sha256, size):
            self.present += 1
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        offset = part.stat().st_size if part.is_file() else 0
        request = urllib.request.Request(url, headers={"User-Agent": "pptarena-fetch"})
        if offset:
            request.add_header("Range", f"bytes={offset}-")
        try:
            response = urllib.request.urlopen(request, timeout=30)  # noqa: S310 - the dataset's own URLs
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and offset and (size is None or offset == size):
                response = None  # the part file is already complete
            else:
                raise FetchError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FetchError(
                f"cannot download {url}: {reason} (offline? run the same command again to resume)"
            ) from None
        if response is not None:
            with response:
                resumed = offset > 0 and response.status == 206
                if not resumed:
                    offset = 0
                length = response.headers.get("Content-Length")
                total = offset + int(length) if length and length.isdigit() else size
                self._stream(response, part, offset, total, dest.name, url)
                self.resumed += int(resumed)
        got = part.stat().st_size
        if size is not None and got != size:
            part.unlink(missing_ok=True)
            raise FetchError(f"{url}: got {got} bytes, the source says {size}; removed, run again")
        if sha256 and sha256_of(part) != sha256.lower():
            actual = sha256_of(part)
            part.unlink(missing_ok=True)
            raise FetchError(
                f"{relative}: SHA-256 {actual} does not match the source's {sha256.lower()}; the corrupt "
                "download was removed (run again to fetch it anew)"
            )
        os.replace(part, dest)
        self.fetched += 1
        return dest

    def _stream(self, response: Any, part: Path, offset: int, total: int | None, name: str, url: str) -> None:
        mode = "ab" if offset else "wb"
        bar = _Bar(name, total, offset) if self.progress else None
        try:
            with open(part, mode) as out:
                while True:
                    try:
                        block = response.read(CHUNK)
                    except (OSError, ValueError) as exc:  # connection dropped mid-file
                        raise FetchError(
                            f"download of {url} was interrupted after {out.tell()} bytes ({exc}); "
                            "run the same command again to resume"
                        ) from None
                    if not block:
                        if total is not None and out.tell() < total:  # the server closed early
                            raise FetchError(
                                f"download of {url} was interrupted after {out.tell()} of {total} bytes; "
                                "run the same command again to resume"
                            )
                        break
                    out.write(block)
                    self.bytes += len(block)
                    if bar is not None:
                        bar.advance(len(block))
        finally:
            if bar is not None:
                bar.close()

    @staticmethod
    def _good(path: Path, sha256: str | None, size: int | None) -> bool:
        if size is not None and path.stat().st_size != size:
            return False
        return not sha256 or sha256_of(path) == sha256.lower()

    # ------------------------------------------------------------------ Hugging Face hub

    def hf(
        self,
        repo_id: str,
        filename: str,
        *,
        repo_type: str = "dataset",
        revision: str = "main",
        endpoint: str | None = None,
        into: str = "",
    ) -> Path:
        """``root/into/filename`` from a hub repository (checked against the hub's SHA-256 when it has
        one); ``endpoint`` is a hub mirror (default: huggingface.co or ``HF_ENDPOINT``).
        """
        hub = _hub()
        local = _inside(self.root, into) if into else self.root
        dest = _inside(local, filename)
        url = hub.hf_hub_url(repo_id, filename, repo_type=repo_type, revision=revision, endpoint=endpoint)
        try:
            meta = hub.get_hf_file_metadata(url)
        except Exception as exc:  # noqa: BLE001 - httpx / hub errors of every kind become one line
            raise FetchError(f"cannot reach {url}: {_one_line(exc)} (offline?)") from None
        sha = (meta.etag or "").strip('"').lower()
        sha = sha if _SHA256.match(sha) else None
        if dest.is_file() and self._good(dest, sha, meta.size):
            self.present += 1
            return dest
        if not self.progress:
            hub.utils.disable_progress_bars()
        try:
            path = Path(
                hub.hf_hub_download(
                    repo_id,
                    filename,
                    repo_type=repo_type,
                    revision=revision,
                    local_dir=local,
                    endpoint=endpoint,
                    force_download=dest.is_file(),  # a file that failed the check above
                )
            )
        except Exception as exc:  # noqa: BLE001
            raise FetchError(
                f"cannot download {filename} from {repo_id}: {_one_line(exc)} (run again to retry)"
            ) from None
        if sha and sha256_of(path) != sha:
            path.unlink(missing_ok=True)
            raise FetchError(
                f"{filename}: the downloaded file does not match the hub's SHA-256 {sha}; removed "
                "(run again to fetch it anew)"
            )
        self.fetched += 1
        self.bytes += path.stat().st_size
        return path

    def hf_snapshot(self, repo_id: str, *, repo_type: str = "dataset", endpoint: str | None = None) -> Path:
        """A whole hub repository into ``root`` (huggingface_hub's snapshot download)."""
        hub = _hub()
        if not self.progress:
            hub.utils.disable_progress_bars()
        try:
            hub.snapshot_download(repo_id, repo_type=repo_type, local_dir=self.root, endpoint=endpoint)
        except Exception as exc:  # noqa: BLE001
            raise FetchError(f"cannot download {repo_id}: {_one_line(exc)} (offline? run again)") from None
        self.fetched += 1
        return self.root

    def unzip(self, archive: Path, relative: str, *, strip: int = 1) -> Path:
        """Extract a zip archive into ``root/relative``, dropping ``strip`` leading path parts
        (GitHub's ``<repo>-<ref>/``). Members that would land outside, links and devices are refused.
        """
        import shutil
        import stat
        import zipfile

        out = _inside(self.root, relative)
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                parts = Path(info.filename).parts[strip:]
                if not parts:
                    continue
                kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the archive records no file type
                if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
                    raise FetchError(f"{archive.name}: refusing the link or special file {info.filename!r}")
                target = _inside(out, str(Path(*parts)))
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        return out

    def summary(self) -> str:
        """``fetched 3 file(s) (1 resumed, 2.1 MB), 4 already present``."""
        return (
            f"fetched {self.fetched} file(s) ({self.resumed} resumed, {self.bytes / 1e6:.1f} MB), "
            f"{self.present} already present"
        )


def _hub() -> Any:
    try:
        import huggingface_hub
        import huggingface_hub.utils  # noqa: F401 - disable_progress_bars
    except ImportError as exc:
        raise FetchError(
            f"this dataset's files are on the Hugging Face hub: pip install huggingface_hub ({exc})"
        ) from None
    return huggingface_hub


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:240]}"


class _Bar:
    """A rich progress bar for one file (only drawn on a terminal)."""

    def __init__(self, name: str, total: int | None, done: int):
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task(name, total=total, completed=done)

    def advance(self, n: int) -> None:
        self.progress.advance(self.task, n)

    def close(self) -> None:
        self.progress.stop()
