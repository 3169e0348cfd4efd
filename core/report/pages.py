"""Task pages, for runs too large for a single page.

``write_pages`` writes ``report/tasks-NNNN.html`` beside the index (``report.html``, see
:mod:`pptarena.report.index`), :data:`TASKS_PER_PAGE` tasks to a page. Each task's section is the
one of the single-page report
(:func:`pptarena.report.html.task_html`: instruction, every agent's attempt with renders, edits,
verdicts, re-scores, logs), with inline CSS and links to the index and the neighbouring pages; slide
images stay in the run folder and are linked relatively, so the run folder opens offline as a whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from pptarena.report.data import RunData
from pptarena.report.fileio import write_derived
from pptarena.report.forkwork import run_shared
from pptarena.report.renders import RenderBudget
from pptarena.report.tables import TableData
from pptarena.report.verdicts import esc
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.rundir import REPORT_PAGES

PAGES_DIR = REPORT_PAGES
TASKS_PER_PAGE = 20  # tasks on one page: few files to write (file creation is the cost on busy disks)
PAGE_CSS = "nav.back{margin:10px 0;font-size:13px}nav.back a{margin-right:14px}"


@dataclass(frozen=True)
class HtmlParts:
    """The single-page report's building blocks (:mod:`pptarena.report.html` hands them in).

    Passed rather than imported, so the index and the task pages show exactly what the single page
    shows without the report modules importing each other in a circle.
    """

    css: str
    table_html: Callable[[TableData], str]
    plots_html: Callable[[RunData], str]
    task_html: Callable[..., str]
    anchor: Callable[[str], str]


def page_name(number: int) -> str:
    """File name of the ``number``-th task page (1-based)."""
    return f"tasks-{number:04d}.html"


def task_page(
    data: RunData,
    task_ids: list[str],
    tasks: dict[str, Any],
    budget: RenderBudget | None,
    base: Path,
    index_href: str,
    number: int,
    count: int,
    parts: HtmlParts,
) -> str:
    """A whole page holding the sections of ``task_ids``; ``data`` may hold only these tasks' rows.

    The page lives in ``base/report/`` but its ``<base href="../">`` makes every relative link
    (slide images, logs, the index, other pages) resolve from ``base``, the index's folder, just as
    on the single-page report.
    """
    here = f"{PAGES_DIR}/{page_name(number)}"
    links = [f'<a href="{escape(index_href)}">← all tasks ({esc(data.run_dir.resolve().name, 200)})</a>']
    if number > 1:
        links.append(f'<a href="{PAGES_DIR}/{page_name(number - 1)}">◀ previous page</a>')
    links.append(f"page {number} of {count}")
    if number < count:
        links.append(f'<a href="{PAGES_DIR}/{page_name(number + 1)}">next page ▶</a>')
    nav = f'<nav class="back">{"".join(links)}</nav>'
    toc = "".join(f'<a href="{here}#{escape(parts.anchor(t))}">{esc(t, 100)}</a><br>' for t in task_ids)
    sections = "".join(parts.task_html(data, t, tasks.get(t), budget, base) for t in task_ids)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width'><base href='../'>"
        f"<title>tasks, page {number} — pptarena report</title>"
        f"<style>{parts.css}{PAGE_CSS}</style></head><body><main>{nav}<nav class='toc'>{toc}</nav>"
        f"{sections}{nav}</main></body></html>"
    )


@dataclass
class PageStats:
    """What :func:`write_pages` did: the pages built, and those skipped because their inputs were
    unchanged (:mod:`pptarena.report.pageinputs`)."""

    built: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)


def write_pages(
    data: RunData,
    tasks: dict[str, Any],
    budget: RenderBudget | None,
    index_path: Path,
    parts: HtmlParts,
    workers: int = 1,
    stats: PageStats | None = None,
) -> dict[str, str]:
    """Write the task pages into ``<index folder>/report/``; returns task id -> link relative to the index.

    Tasks keep the order of the results, :data:`TASKS_PER_PAGE` to a page; pages of an earlier,
    larger report that this one no longer needs are removed. A page whose inputs (its result lines,
    tasks, pair-folder files, the code, ...) are unchanged since it was written, and which is itself
    unchanged, is not rebuilt (:mod:`pptarena.report.pageinputs`); ``stats`` (when given) is filled
    with the pages built and skipped. With ``workers`` = 2 and nothing to render, a forked process
    writes every other page (:mod:`pptarena.report.forkwork`; only for callers whose process has no
    other threads).
    """
    from pptarena.report import pageinputs
    from pptarena.report.pairfiles import held_parents, noting_reads

    folder = index_path.parent / PAGES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    by_task: dict[str, list[ResultRow]] = {}
    for r in data.rows:
        by_task.setdefault(r.task_id, []).append(r)
    order = list(by_task)
    count = max(1, -(-len(order) // TASKS_PER_PAGE))
    links = {t: f"{PAGES_DIR}/{page_name(k // TASKS_PER_PAGE + 1)}" for k, t in enumerate(order)}

    from pptarena.trust.redact import redact_text, secrets

    known = secrets()  # every page leaves the run like report.html does: through the redactor
    agents = list(data.manifest.agents)
    static = pageinputs.static_key(data.run_dir, index_path.name, count, agents, budget, known)
    rescore_rows: dict[str, dict[str, list[ResultRow]]] = {}
    for name, run in data.rescores.items():
        grouped = rescore_rows[name] = {}
        for r in run.rows:
            grouped.setdefault(r.task_id, []).append(r)

    def chunk(i: int) -> list[str]:
        return order[i * TASKS_PER_PAGE : (i + 1) * TASKS_PER_PAGE]

    keys = [
        pageinputs.page_key(
            static, i + 1, chunk(i), [r for t in chunk(i) for r in by_task[t]], tasks, rescore_rows
        )
        for i in range(count)
    ]

    def write(i: int) -> tuple[str, dict[str, Any] | None]:
        ids = chunk(i)
        rows = [r for t in ids for r in by_task[t]]
        sub = dataclasses.replace(data, rows=rows)  # agents, rows and look-ups of these tasks only
        with noting_reads() as reads:
            page = task_page(sub, ids, tasks, budget, index_path.parent, index_path.name, i + 1, count, parts)
        path = folder / page_name(i + 1)
        write_derived(path, redact_text(page, known))
        entry = None if reads.volatile else pageinputs.page_entry(keys[i], reads.record(), path)
        return page_name(i + 1), entry

    old = pageinputs.load_record(folder)
    record: dict[str, Any] = {}
    with held_parents():
        todo = []
        for i in range(count):
            name = page_name(i + 1)
            if pageinputs.page_unchanged(old.get(name), keys[i], folder / name):
                record[name] = old[name]
                if stats is not None:
                    stats.skipped.append(name)
            else:
                todo.append(i)
        # no threads: the pages are string work between small reads, and threads only contend for the
        # GIL (four threads took 1.5x the time of one on a 10,000-pair run); the renderer is never shared
        for name, entry in run_shared(todo, write, workers if budget is None else 1):
            if entry is not None:
                record[name] = entry
            if stats is not None:
                stats.built.append(name)
    written = {page_name(i + 1) for i in range(count)}
    for old_page in folder.glob("tasks-*.html"):
        if old_page.name not in written:
            old_page.unlink()
    if record != old or not (folder / pageinputs.RECORD_NAME).is_file():
        pageinputs.save_record(folder, dict(sorted(record.items())))
    return links
