"""What each task page was built from, so that a report rebuilds only the pages whose inputs changed.

``report/page-inputs.json`` (beside the task pages, replaced atomically) holds, per page:

- ``key``: a SHA-256 of everything the page shows that is not a pair-folder file: the page's
  number and the page count, the run folder's name and place, the index's name, the result lines
  of its tasks (and of their re-scorings), its tasks from the dataset, the run's agent list, the
  rendering option, the secrets the redactor masks (digested, never stored) and the code that
  draws a page (:func:`code_version`);
- ``reads``: the status (type, size, mtime, ctime, inode) of every file and folder the page read
  from pair folders, or found missing or refused, as :class:`pptarena.report.pairfiles.PairFiles`
  noted them;
- ``page``: the page file's own status once written (a page edited or removed is rebuilt).

A page is skipped only when all three are unchanged (:func:`page_unchanged`), checked through the
same no-link walk the reads use. A page that read decks or renders (``volatile``) is not recorded,
so it is rebuilt every time. A missing, damaged or oversized record means every page is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pptarena.report.pairfiles import folder_unchanged, stat_key
from pptarena.run.folder.records import ResultRow

RECORD_NAME = "page-inputs.json"
RECORD_VERSION = 1
MAX_RECORD_BYTES = 256 * 1024 * 1024
#: the modules (below the package) whose code shapes a task page
CODE_FILES = (
    "report/*.py",
    "trust/redact.py",
    "trust/safeio.py",
    "run/folder/records.py",
    "run/folder/rundir.py",
    "_version.py",
)


@lru_cache(maxsize=1)
def code_version() -> str:
    """A SHA-256 over the source of the modules that draw a task page (:data:`CODE_FILES`)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for pattern in CODE_FILES:
        for path in sorted(package.glob(pattern)):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def row_text(row: ResultRow) -> str:
    """A result line as the key sees it: its full JSON record."""
    try:
        return row.model_dump_json()
    except ValueError:  # text JSON cannot encode (a lone surrogate): Python's encoder
        return json.dumps(row.to_json(), ensure_ascii=True, default=str)


def static_key(
    run_dir: Path, index_name: str, count: int, agents: list[str], budget: Any, known: list[str]
) -> str:
    """The part of every page's key shared by all pages of one report."""
    digest = hashlib.sha256()
    for part in (
        code_version(),
        os.path.abspath(run_dir),
        run_dir.resolve().name,
        index_name,
        str(count),
        json.dumps(agents),
        "no renders" if budget is None else f"renders, at most {budget.limit}",
        hashlib.sha256("\0".join(known).encode("utf-8", errors="surrogatepass")).hexdigest(),
    ):
        digest.update(part.encode("utf-8", errors="surrogatepass") + b"\0")
    return digest.hexdigest()


def page_key(
    static: str,
    number: int,
    task_ids: list[str],
    rows: list[ResultRow],
    tasks: dict[str, Any],
    rescore_rows: dict[str, dict[str, list[ResultRow]]],
) -> str:
    """One page's key: :func:`static_key`, its number, its tasks (ids, dataset entries, result lines,
    re-scorings' lines)."""
    digest = hashlib.sha256(f"{static}\0{number}\0".encode())
    for task_id in task_ids:
        digest.update(task_id.encode("utf-8", errors="surrogatepass") + b"\0")
        digest.update(repr(tasks.get(task_id)).encode("utf-8", errors="surrogatepass") + b"\0")
    for row in rows:
        digest.update(row_text(row).encode("utf-8", errors="surrogatepass") + b"\n")
    for name, by_task in rescore_rows.items():
        digest.update(f"\0rescore {name}\0".encode("utf-8", errors="surrogatepass"))
        for task_id in task_ids:
            for row in by_task.get(task_id, ()):
                digest.update(row_text(row).encode("utf-8", errors="surrogatepass") + b"\n")
    return digest.hexdigest()


def load_record(folder: Path) -> dict[str, Any]:
    """The pages' record in ``folder`` (``{}`` when missing, not a regular file, too large or damaged)."""
    from pptarena.report.fileio import read_regular

    raw = read_regular(folder / RECORD_NAME, MAX_RECORD_BYTES)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("version") != RECORD_VERSION:
        return {}
    pages = data.get("pages")
    return pages if isinstance(pages, dict) else {}


def save_record(folder: Path, pages: dict[str, Any]) -> None:
    """Replace the record in ``folder`` (a new file renamed over the old: never half-written)."""
    from pptarena.trust.safeio import write_replacing

    data = json.dumps({"version": RECORD_VERSION, "pages": pages}, separators=(",", ":"))
    write_replacing(folder / RECORD_NAME, data.encode("utf-8", errors="surrogatepass"))


def page_entry(key: str, reads: dict[str, dict[str, Any]], page: Path) -> dict[str, Any]:
    """What is recorded for a page just written."""
    return {"key": key, "reads": reads, "page": stat_key(os.stat(page, follow_symlinks=False))}


def page_unchanged(entry: Any, key: str, page: Path) -> bool:
    """Whether the page recorded as ``entry`` is still what a rebuild with inputs ``key`` would write:
    same key, the page file as written, and every pair-folder read the same."""
    if not isinstance(entry, dict) or entry.get("key") != key:
        return False
    try:
        now = stat_key(os.stat(page, follow_symlinks=False))
    except FileNotFoundError:
        return False
    if now != entry.get("page"):
        return False
    reads = entry.get("reads")
    if not isinstance(reads, dict):
        return False
    for root, folders in reads.items():
        if not isinstance(folders, dict):
            return False
        for rel, recorded in folders.items():
            if not folder_unchanged(root, rel, recorded):
                return False
    return True
