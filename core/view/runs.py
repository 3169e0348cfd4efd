"""The run folders ``arena view`` serves: discovery, and per run its live index, its summary (the
leaderboard and paired comparisons of ``arena report``, computed in the background) and its tasks.

The summary part of the run page is :func:`pptarena.report.top.page_top` — the same tables and
plots as ``report.html``, from :func:`pptarena.report.data.load_run` (``summary.json`` reused when
it matches the lines, else :func:`pptarena.run.folder.results.summarize_results`). It is computed in a
child process (:mod:`pptarena.view.summaryjob`) when the run has new lines, at most every
:data:`SUMMARY_EVERY` seconds, so the page never waits for it and the server's memory stays small.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from pptarena.run.folder.manifest_record import Manifest
from pptarena.run.folder.rundir import MANIFEST, RESULTS
from pptarena.view.runindex import RunIndex

SUMMARY_EVERY = 10.0
SUMMARY_TIMEOUT = 1800
MAX_DEPTH = 2


def find_runs(paths: list[Path]) -> list[Path]:
    """The run folders among ``paths`` and below them (two levels), resolved, in a stable order."""
    from pptarena.run.folder.rundir import RunDir

    found: list[Path] = []
    for p in paths:
        p = Path(p).resolve()
        if RunDir(p).is_run() or (p / RESULTS).is_file():
            found.append(p)
            continue
        level = [p]
        for _ in range(MAX_DEPTH):
            nxt = []
            for folder in level:
                try:
                    subs = sorted(x for x in folder.iterdir() if x.is_dir() and not x.is_symlink())
                except OSError:
                    continue
                for sub in subs:
                    if (sub / RESULTS).is_file():
                        found.append(sub.resolve())
                    else:
                        nxt.append(sub)
            level = nxt
    return list(dict.fromkeys(found))


def run_id(path: Path) -> str:
    """A short stable id of a run folder (for URLs)."""
    return hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:12]


class RunState:
    """One served run: index, background summary, tasks and renderer (built on first use)."""

    def __init__(self, path: Path, *, render: bool = True, max_renders: int = 400):
        self.path = Path(path).resolve()
        self.id = run_id(self.path)
        self.index = RunIndex(self.path / RESULTS)
        self.render = render
        self.max_renders = max_renders
        self._lock = threading.Lock()
        self._summary: tuple[int, str] | None = None  # (index version, html)
        self._computing = False
        self._last_start = 0.0
        self._tasks: tuple[dict[str, Any], str | None] | None = None
        self._budget: Any = None
        self.render_lock = threading.Lock()

    @property
    def name(self) -> str:
        """The folder's name."""
        return self.path.name

    def manifest(self) -> Manifest:
        """The run's ``manifest.json`` (an empty one when missing, unreadable or not a manifest)."""
        return Manifest.read(self.path / MANIFEST)

    def status(self) -> str:
        """``finished``, ``running`` (not finished, results written in the last minute) or ``stopped``.

        The run's lock file is never touched: even a brief shared lock could make a starting run fail.
        """
        if self.manifest().finished_at:
            return "finished"
        try:
            recent = time.time() - (self.path / RESULTS).stat().st_mtime < 60
        except OSError:
            recent = False
        return "running" if recent else "stopped"

    # ------------------------------------------------------------------ summary

    def summary_html(self) -> tuple[str | None, bool]:
        """``(the leaderboard part of the run page or None, whether it is up to date)``; starts a
        background computation when the run has changed (see the module doc)."""
        self.index.refresh()
        version = self.index.version
        with self._lock:
            got = self._summary
            fresh = got is not None and got[0] == version
            due = time.monotonic() - self._last_start >= SUMMARY_EVERY or got is None
            if not fresh and not self._computing and due:
                self._computing = True
                self._last_start = time.monotonic()
                threading.Thread(target=self._compute, args=(version,), daemon=True).start()
        return (got[1] if got else None), fresh

    def compute_summary(self) -> str:
        """The run page's leaderboard part now, computed by :mod:`pptarena.view.summaryjob` in a child
        process (the server's memory does not grow with the run)."""
        import subprocess
        import sys

        done = subprocess.run(
            [sys.executable, "-m", "pptarena.view.summaryjob", str(self.path)],
            capture_output=True,
            text=True,
            timeout=SUMMARY_TIMEOUT,
            check=False,
        )
        try:
            out = json.loads(done.stdout)
        except ValueError:
            out = {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        if "html" in out:
            return str(out["html"])
        raise RuntimeError(out.get("error") or "the summary could not be computed")

    def _compute(self, version: int) -> None:
        try:
            html = self.compute_summary()
        except Exception as exc:  # noqa: BLE001 - shown on the page instead
            from pptarena.report.verdicts import esc

            html = f'<div class="problem">The leaderboard could not be computed: {esc(exc, 600)}</div>'
        with self._lock:
            self._summary = (version, html)
            self._computing = False
            self._last_start = time.monotonic()  # the next one at least SUMMARY_EVERY after this one ended

    # ------------------------------------------------------------------ tasks and renders

    def tasks(self) -> tuple[dict[str, Any], str | None]:
        """The run dataset's tasks by id, or ``({}, why not)`` (loaded once)."""
        if self._tasks is None:
            from pptarena.report.data import tasks_or_problem
            from pptarena.run.configuration.registry import get_registry

            self._tasks = tasks_or_problem(self.manifest(), get_registry())
        return self._tasks

    def budget(self) -> Any:
        """The run's renderer behind a :class:`pptarena.report.renders.RenderBudget` (None: no renders)."""
        if not self.render:
            return None
        if self._budget is None:
            from pptarena.report.data import run_config
            from pptarena.report.renders import RenderBudget
            from pptarena.run.configuration.registry import get_registry

            manifest = self.manifest()

            def make() -> Any:
                from pptarena.run.configuration.components import Components

                registry = get_registry()
                return Components(run_config(manifest, registry), registry).renderer()

            self._budget = RenderBudget(make, self.max_renders)
        return self._budget

    def to_json(self) -> dict[str, Any]:
        """What the runs page lists about this run."""
        m = self.manifest()
        return {
            "id": self.id,
            "name": self.name,
            "path": str(self.path),
            "status": self.status(),
            "agents": m.agents or self.index.agents,
            "judges": m.judges or self.index.judges,
            "pairs": len(self.index),
            "planned": _planned(m),
            "started_at": m.started_at,
            "finished_at": m.finished_at,
        }


def _planned(manifest: Manifest) -> int | None:
    """Attempts the run set out to make (tasks × agents × epochs), when the manifest says."""
    if manifest.tasks is None or "agents" not in manifest.model_fields_set:
        return None
    return manifest.tasks * len(manifest.agents) * (manifest.epochs or 1)
