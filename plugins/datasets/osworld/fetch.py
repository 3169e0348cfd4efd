"""``arena dataset fetch osworld``: OSWorld's Impress task files and the files each task downloads.

Written into ``DIR``::

    DIR/evaluation_examples/test_all.json                     the task index (root)
    DIR/evaluation_examples/examples/<domain>/<task id>.json  the selected tasks
    DIR/files/<domain>/<task id>/<name>                       their files (files_dir)

The task files come from OSWorld's repository on GitHub (``--source`` takes a mirror URL or an
existing ``evaluation_examples`` folder). Each task's files come from the URLs in its task file:
a Hugging Face URL (``.../datasets/<repo>/resolve/<revision>/<path>``, current OSWorld's
``xlangai/ubuntu_osworld_file_cache``) goes through ``huggingface_hub`` and lands at
``files/<path>``; any other URL (older snapshots' Google Drive links) is downloaded as is under the
name the task gives it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from pptarena.fetch import FetchDescription, Fetcher, FetchError

from ..common import matches_any

OSWORLD_RAW = "https://raw.githubusercontent.com/xlang-ai/OSWorld/main/evaluation_examples"
_HF_URL = re.compile(r"^/datasets/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")


def description() -> FetchDescription:
    """Where the OSWorld files come from and their licence."""
    return FetchDescription(
        source="OSWorld's evaluation_examples (github.com/xlang-ai/OSWorld) and, per task, the files its "
        "task file downloads (the Hugging Face dataset xlangai/ubuntu_osworld_file_cache)",
        licence="Apache-2.0 (OSWorld's repository; the file cache's dataset card says the same). The decks "
        "are documents OSWorld collected; check their terms before redistributing them.",
    )


def _task_urls(task: dict[str, Any]) -> list[tuple[str, str]]:
    """``(url, file name)`` of every file a task downloads or compares with."""
    out = []
    for step in task.get("config") or []:
        if step.get("type") == "download":
            for entry in (step.get("parameters") or {}).get("files") or []:
                out.append((str(entry.get("url", "")), PurePosixPath(str(entry.get("path", ""))).name))
    expected = (task.get("evaluator") or {}).get("expected")
    for spec in expected if isinstance(expected, list) else [expected]:
        if isinstance(spec, dict) and spec.get("type") == "cloud_file":
            name = str(spec.get("dest") or PurePosixPath(urlparse(str(spec.get("path"))).path).name)
            out.append((str(spec.get("path", "")), name))
    return [(u, n) for u, n in out if u and n and "/" not in n and n not in (".", "..")]


def fetch(
    fetcher: Fetcher,
    dest: Path,
    task_globs: list[str],
    source: str | None,
    domain: str = "libreoffice_impress",
) -> str:
    """Download the index, the selected tasks and their files; returns the ``[dataset]`` table."""
    local = Path(source).expanduser() if source and "://" not in source else None
    if local is not None:
        root = local
        listing = json.loads((root / "test_all.json").read_text())
    else:
        base = (source or OSWORLD_RAW).rstrip("/")
        root = dest / "evaluation_examples"
        listing = json.loads(
            fetcher.url(f"{base}/test_all.json", "evaluation_examples/test_all.json").read_text()
        )
    ids = [t for t in listing.get(domain) or [] if isinstance(t, str) and "/" not in t]
    if task_globs:
        unused = [g for g in task_globs if not any(matches_any(t, [g]) for t in ids)]
        if unused:
            raise FetchError(
                f"--task {unused} match no {domain} task id (ids look like {ids[0] if ids else '?'})"
            )
        ids = [t for t in ids if matches_any(t, task_globs)]
    for task_id in ids:
        relative = f"examples/{domain}/{task_id}.json"
        path = (
            root / relative
            if local is not None
            else fetcher.url(f"{base}/{relative}", f"evaluation_examples/{relative}")
        )
        for url, name in _task_urls(json.loads(path.read_text())):
            parsed = urlparse(url)
            hub = _HF_URL.match(parsed.path)
            if hub:
                endpoint = None if parsed.netloc == "huggingface.co" else f"{parsed.scheme}://{parsed.netloc}"
                fetcher.hf(hub["repo"], hub["path"], revision=hub["rev"], endpoint=endpoint, into="files")
            else:
                fetcher.url(url, f"files/{domain}/{task_id}/{name}")
    return f'[dataset]\nuse = "osworld"\nroot = "{root}"\nfiles_dir = "{dest / "files" / domain}"' + (
        f"\nids = {json.dumps(list(task_globs))}" if task_globs else ""
    )
