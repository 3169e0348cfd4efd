"""``report.html``: one offline page per run — leaderboard, plots, and a section per task.

The page is a single HTML file with inline CSS and inline SVG plots; slide
images stay beside it in the run folder (``tasks/<agent>/<task>/renders/...``)
and are linked relatively, so the folder can be copied or zipped as a whole and
opened without a network. Per task it shows the instruction, the original /
prediction / target renders of the changed slides side by side, the edits as
text (:meth:`pptarena.deck.DeckDiff.to_text`), each judge's verdict (rubric
trees drawn as trees), re-scores, the agent's log and any GUI trajectory.

Why it is long: it is the markup of one page: the stylesheet and every section that uses its classes
(task, attempt, later epochs, re-scores, the slide grid the labelling workbench draws too), with
:func:`write_report`, which chooses one page or the paged index (:mod:`pptarena.report.index` takes
these parts) and writes the redacted page atomically. The ``CSS`` block, which ``arena view`` serves as
well, could move to a module of its own (not done yet).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

from pptarena.report.data import RunData, load_run, run_config, tasks_or_problem
from pptarena.report.pairfiles import PairFiles, held_parents
from pptarena.report.plots import histogram_rows_svg
from pptarena.report.renders import PairView, RenderBudget, pair_decks, pair_view
from pptarena.report.tables import TableData
from pptarena.report.top import page_top
from pptarena.report.verdicts import (
    agent_log_html,
    esc,
    notes_html,
    rel_url,
    score_cell,
    trajectory_html,
    verdict_html,
)
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.rundir import REPORT

REPORT_NAME = REPORT  # the run folder's report file (pptarena.run.folder.rundir)
DEFAULT_MAX_RENDERS = 120

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d1d1f;background:#fafafa;\
font-size:14px}
header{background:#1f2d3d;color:#fff;padding:16px 28px}header h1{margin:0 0 4px;font-size:22px}
header .meta{color:#c9d3dd;font-size:12px}main{padding:8px 28px 40px}
h2{border-bottom:2px solid #1f2d3d;padding-bottom:4px;margin-top:32px}h3{margin:18px 0 6px}
table{border-collapse:collapse;margin:8px 0;background:#fff}\
th,td{border:1px solid #d5d9de;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#eef1f4}td:first-child,th:first-child{text-align:left}\
table.small td,table.small th{font-size:12px;text-align:left}
.note,.muted{color:#666;font-size:12px}.plots{display:flex;flex-wrap:wrap;gap:16px}\
.plots svg{background:#fff;border:1px solid #d5d9de}
section.task{background:#fff;border:1px solid #d5d9de;border-radius:6px;padding:12px 18px;margin:22px 0}
.instruction{white-space:pre-wrap;background:#f3f6f9;border-left:4px solid #4e79a7;padding:8px 12px;\
font-size:15px}
.chips span{display:inline-block;background:#e8edf2;border-radius:10px;padding:1px 8px;margin:2px;\
font-size:12px}
.pair{border-top:1px solid #e3e6ea;margin-top:14px;padding-top:8px}.pair h4{margin:4px 0;font-size:16px}
.badge{border-radius:4px;padding:1px 6px;font-size:12px;color:#fff;background:#888}\
.badge.scored{background:#59a14f}
.badge.agent_error,.badge.judge_error{background:#e15759}.badge.timeout{background:#f28e2b}\
.badge.infra_error{background:#9c755f}
.slides{display:grid;grid-template-columns:60px repeat(3,minmax(0,1fr));gap:6px;align-items:start;\
margin:8px 0;max-width:1100px}
.slides .h{font-weight:bold;text-align:center;background:#eef1f4;padding:3px}\
.slides img{width:100%;border:1px solid #ccc;background:#fff}
.slides .none{color:#999;text-align:center;padding:20px 0;border:1px dashed #ccc}\
.slides .num{font-size:12px;color:#555;padding-top:6px}
.edits{display:grid;grid-template-columns:1fr 1fr;gap:10px}\
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;
border:1px solid #e1e4e8;padding:8px;font-size:12px;max-height:320px;overflow:auto;margin:4px 0}
.verdict{border-left:3px solid #4e79a7;padding:2px 10px;margin:8px 0}.verdict h5{margin:2px 0;font-size:14px}
.metrics{font-size:12px;color:#555}.explanation{white-space:pre-wrap;margin:4px 0}\
.err{color:#b00020;white-space:pre-wrap;font-size:12px}
ul.tree{list-style:none;margin:2px 0 2px 10px;padding-left:14px;border-left:1px dashed #bbb}\
ul.tree.root{border-left:none;margin-left:0;padding-left:0}
ul.tree li{margin:3px 0}\
.node-score{display:inline-block;min-width:34px;text-align:center;border-radius:3px;color:#fff;font-size:12px}
.node-score.ok{background:#59a14f}.node-score.part{background:#edc948;color:#222}\
.node-score.bad{background:#e15759}
.crit{font-size:11px;color:#b00020;border:1px solid #b00020;border-radius:3px;padding:0 3px}\
.desc{color:#444;font-size:12px}
.reason{font-size:12px;color:#333;font-style:italic}.score{font-weight:bold}svg.bar{vertical-align:middle}
nav.toc{columns:3;font-size:12px}nav.toc a{text-decoration:none}\
.problem{background:#fff4e5;border:1px solid #f0c36d;padding:6px 10px;margin:6px 0}
img.thumb{max-width:360px;display:block;margin:4px 0;border:1px solid #ccc}\
details summary{cursor:pointer;font-weight:bold;margin:6px 0}
.agent-notes{white-space:pre-wrap;background:#f7f3e8;border-left:4px solid #b07aa1;padding:4px 10px;\
margin:6px 0;font-size:13px}
"""


def table_html(t: TableData, heading: bool = True) -> str:
    """A :class:`TableData` as an HTML table with its title (unless ``heading`` is false) and note."""
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in t.rows)
    note = f'<div class="note">{escape(t.note)}</div>' if t.note else ""
    title = f"<h3>{escape(t.title)}</h3>" if heading else ""
    return f"{title}<table><tr>{head}</tr>{body}</table>{note}"


def _scores(run: RunData, agent: str, judge: str) -> list[float]:
    """The scores ``judge`` gave ``agent``'s attempts (lines without one left out)."""
    return [float(s) for r in run.rows if r.agent == agent and isinstance(s := r.score(judge), int | float)]


def plots_html(data: RunData) -> str:
    """Score histograms: one SVG per judge (a row per agent), then one per re-score judge."""
    svgs = []
    sources: list[tuple[str, RunData]] = [("", data)] + [
        (f"rescore/{k} · ", v) for k, v in data.rescores.items()
    ]
    for prefix, run in sources:
        for judge in run.judges:
            series = {a: _scores(run, a, judge) for a in run.agents}
            if any(series.values()):
                means = {a: run.summary.agent(a).judge(judge) for a in series}
                svgs.append(
                    histogram_rows_svg(
                        f"{prefix}{judge}: score distribution",
                        series,
                        means={a: (b.mean, b.mean_ci95) for a, b in means.items()},
                    )
                )
    if not svgs:
        return '<p class="muted">No scores to plot yet.</p>'
    return '<div class="plots">' + "".join(svgs) + "</div>"


def slide_grid(
    view: PairView,
    image_url: Callable[[str, int, Path], str | None],
    empty: str = "No slide was edited in the prediction or the target.",
) -> str:
    """The changed slides side by side, original | prediction | target: the one grid of the report's
    pair pages and the label page. ``image_url(role, number, image)`` gives an image's URL (None: no
    image to show); ``empty`` is said when no slide changed."""
    if not view.rows:
        return f'<p class="muted">{escape(empty)}</p>'
    cells = [
        '<div class="slides"><div></div><div class="h">original</div>'
        '<div class="h">prediction</div><div class="h">target</div>'
    ]
    for row in view.rows:
        label = row.original if row.original is not None else "new"
        cells.append(f'<div class="num">slide {escape(str(label))}</div>')
        for role in ("original", "prediction", "target"):
            n = getattr(row, role)
            img = view.images.get(role, {}).get(n) if n is not None else None
            url = image_url(role, int(n), img) if img is not None and n is not None else None
            if url is not None:
                cells.append(
                    f'<div><img loading="lazy" src="{url}" alt="{role} slide {int(n)}">'
                    f'<div class="muted">{role} slide {int(n)}</div></div>'
                )
            elif n is None:
                cells.append(f'<div class="none">absent in {role}</div>')
            else:
                cells.append(f'<div class="none">{role} slide {int(n)}: no image</div>')
    cells.append("</div>")
    if view.more_rows:
        cells.append(f'<p class="muted">{int(view.more_rows)} more changed slide(s) not shown.</p>')
    return "".join(cells)


def slides_html(view: PairView, base: Path) -> str:
    """Changed slides side by side: original | prediction | target (image links relative to ``base``)."""
    return slide_grid(view, lambda _role, _n, img: rel_url(img, base) if img.is_file() else None)


def _rescore_html(data: RunData, agent: str, task_id: str) -> str:
    parts = []
    for name, run in data.rescores.items():
        row = run.row(agent, task_id)
        if row is None:
            continue
        with PairFiles(run.run_dir, run.pair_dir(agent, task_id)) as files:
            verdicts = run.verdicts(agent, task_id, files=files).get("verdicts") or {}
        inner = "".join(verdict_html(label, v) for label, v in verdicts.items())
        if not inner:
            inner = "".join(f"<p>{esc(j, 100)}: {score_cell(b.score)}</p>" for j, b in row.scores.items())
        parts.append(
            f"<details><summary>Re-score {esc(name, 100)} ({esc(row.status, 30)})</summary>{inner}</details>"
        )
    return "".join(parts)


def pair_html(
    data: RunData, task: Any, agent: str, task_id: str, budget: RenderBudget | None, base: Path
) -> str:
    """One agent's attempt at one task (its folder's files read through one held descriptor,
    :class:`pptarena.report.pairfiles.PairFiles`)."""
    row = data.row(agent, task_id)
    if row is None:
        return f'<div class="pair"><h4>{esc(agent, 100)}</h4><p class="muted">no result yet</p></div>'
    folder = data.pair_dir(agent, task_id)
    with PairFiles(data.run_dir, folder) as files:
        return _pair_html(data, task, agent, task_id, budget, base, row, folder, files)


def _pair_html(
    data: RunData,
    task: Any,
    agent: str,
    task_id: str,
    budget: RenderBudget | None,
    base: Path,
    row: ResultRow,
    folder: Path,
    files: PairFiles,
) -> str:
    status = str(row.status)
    scores = " ".join(f"{esc(j, 100)} {score_cell(b.score)}" for j, b in row.scores.items())
    parts = [
        f'<div class="pair" id="{escape(_anchor(task_id + "--" + agent))}"><h4>{esc(agent, 100)} '
        f'<span class="badge {escape(status)}">{escape(status)}</span> {scores}'
        f' <span class="muted">{esc(row.duration_s, 20)} s</span>'
        + (f' <span class="muted">isolation: {esc(row.isolation, 40)}</span>' if row.isolation else "")
        + "</h4>"
    ]
    others = [r for r in data.rows if r.agent == agent and r.task_id == task_id and r is not row]
    if others:
        attempts = "; ".join(
            f"epoch {r.epoch}: {escape(str(r.status))} "
            + " ".join(f"{esc(j, 100)} {score_cell(b.score)}" for j, b in r.scores.items())
            for r in sorted([row, *others], key=_epoch)
        )
        parts.append(
            f'<p class="muted">{len(others) + 1} attempts (shown: epoch 1; files of epoch N in '
            f"<code>{esc(folder.name, 200)}@eN</code>, each below): {attempts}</p>"
        )
        parts += [later_attempt_html(data, task, r) for r in sorted(others, key=_epoch)]
    if row.error:
        parts.append(f'<div class="err">{esc(row.error)}</div>')
    parts.append(notes_html(row))
    decks = pair_decks(data.run_dir, folder, row, task, files)
    view = pair_view(decks, budget)
    for note in view.notes:
        parts.append(f'<div class="problem">{esc(note, 600)}</div>')
    parts.append(slides_html(view, base))
    if view.prediction_edits or view.target_edits:
        parts.append(
            '<div class="edits"><div><b>Edits original → prediction</b>'
            f"<pre>{esc(view.prediction_edits or '(none)', 30_000)}</pre></div>"
            "<div><b>Edits original → target</b>"
            f"<pre>{esc(view.target_edits or '(no target)', 30_000)}</pre></div></div>"
        )
    verdicts = data.verdicts(agent, task_id, files=files).get("verdicts") or {}
    for label, verdict in verdicts.items():
        parts.append(verdict_html(label, verdict))
    parts.append(_rescore_html(data, agent, task_id))
    parts.append(agent_log_html(folder, files))
    parts.append(trajectory_html(folder, base, files))
    parts.append("</div>")
    return "".join(parts)


def _epoch(row: ResultRow) -> int:
    """Sort key: the attempt's epoch."""
    return row.epoch


def later_attempt_html(data: RunData, task: Any, row: ResultRow) -> str:
    """A folded section for an attempt after epoch 1: its error, its edits (as text, no renders),
    its verdicts and its agent log (a deterministic agent's reused line only says so)."""
    from pptarena.run.folder.rundir import RunDir

    agent, task_id, epoch = row.key
    folder = RunDir(data.run_dir).attempt(agent, task_id, epoch)
    status = str(row.status)
    inner = [f'<div class="err">{esc(row.error)}</div>'] if row.error else []
    inner.append(notes_html(row))
    if row.reused_from_epoch:
        reused = esc(row.reused_from_epoch, 10)
        inner.append(f'<p class="muted">a deterministic agent: epoch {reused}\'s result, reused</p>')
    else:
        with PairFiles(data.run_dir, folder) as files:
            decks = pair_decks(data.run_dir, folder, row, task, files)
            decks.target = None  # epoch 1's section shows the target's edits: not diffed again per attempt
            view = pair_view(decks, None)
            inner += [
                f'<div class="problem">{esc(n, 600)}</div>' for n in view.notes if "not rendered" not in n
            ]
            if view.prediction_edits:
                inner.append(
                    f"<b>Edits original → prediction</b><pre>{esc(view.prediction_edits, 30_000)}</pre>"
                )
            for label, verdict in (data.verdicts(agent, task_id, epoch, files).get("verdicts") or {}).items():
                inner.append(verdict_html(label, verdict))
            inner.append(agent_log_html(folder, files))
    return (
        f'<details class="attempt"><summary>epoch {epoch}: <span class="badge {escape(status)}">'
        f"{escape(status)}</span> <code>{esc(folder.name, 200)}</code></summary>{''.join(inner)}</details>"
    )


def _anchor(text: str) -> str:
    import re

    return "t-" + re.sub(r"[^A-Za-z0-9_-]+", "-", text)[:120]


def task_html(data: RunData, task_id: str, task: Any, budget: RenderBudget | None, base: Path) -> str:
    """A task's section: instruction, metadata, then each agent's attempt."""
    first = next((r for r in data.rows if r.task_id == task_id), None)
    meta = (task.metadata if task is not None else first.metadata if first is not None else None) or {}
    chips = "".join(
        f"<span>{esc(k, 40)}: {esc(', '.join(map(str, v)) if isinstance(v, list) else v, 120)}</span>"
        for k, v in meta.items()
        if k in ("category", "edit_type", "difficulty", "source", "deck")
    )
    parts = [
        f'<section class="task" id="{escape(_anchor(task_id))}"><h2>{esc(task_id, 200)}</h2>'
        f'<div class="chips">{chips}</div>'
    ]
    if task is not None:
        parts.append(f'<div class="instruction">{esc(task.instruction, 8000)}</div>')
        if task.style_target:
            parts.append(f"<p><b>Style target:</b> {esc(task.style_target, 4000)}</p>")
    else:
        parts.append(
            '<div class="problem">The instruction is unavailable: '
            "the run's dataset could not be loaded.</div>"
        )
    for agent in data.agents:
        parts.append(pair_html(data, task, agent, task_id, budget, base))
    parts.append("</section>")
    return "".join(parts)


def render_page(
    data: RunData, tasks: dict[str, Any], budget: RenderBudget | None, problems: list[str], base: Path
) -> str:
    """The whole page as a string."""
    task_ids = data.task_ids()
    toc = "".join(f'<a href="#{escape(_anchor(t))}">{esc(t, 100)}</a><br>' for t in task_ids)
    top = page_top(data, problems, table_html, plots_html, f"{len(data.rows)} results")
    with held_parents():  # the folders holding pair folders stay open while the tasks are drawn
        sections = [task_html(data, t, tasks.get(t), budget, base) for t in task_ids]
    body = [
        *top,
        f"<h2>Tasks ({len(task_ids)})</h2><nav class='toc'>{toc}</nav>",
        *sections,
        "</main>",
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'>"
        f"<title>pptarena report — {esc(data.run_dir.name, 200)}</title>"
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    )


def write_report(
    run_dir: Path,
    *,
    out: Path | None = None,
    render: bool = True,
    max_renders: int = DEFAULT_MAX_RENDERS,
    registry: Any = None,
    layout: str = "auto",
    data: RunData | None = None,
    workers: int = 1,
) -> Path:
    """Write ``report.html`` for a run (default ``RUN_DIR/report.html``) and return its path.

    :param render: make missing slide renders with the run's renderer (at most ``max_renders`` decks);
        when False, or when rendering is impossible, the page says so where images would be.
    :param layout: ``"single"`` (one page with every task), ``"pages"`` (an index with a filterable
        task table plus one page per task, :mod:`pptarena.report.index`) or ``"auto"`` (pages for
        runs of more than ``index.SINGLE_PAGE_MAX_PAIRS`` pairs).
    :param data: the run as :func:`pptarena.report.data.load_run` read it (read again when None).
    :param workers: 2 lets a forked process write half of the task pages when nothing is rendered;
        only for callers whose process runs no other threads (``arena report``).
    :raises pptarena.report.data.RunDirError: when ``run_dir`` is not a run directory.
    """
    run_dir = Path(run_dir)
    if data is None:
        data = load_run(run_dir)
    problems: list[str] = []
    components = None
    if registry is None:
        from pptarena.run.configuration.registry import get_registry

        registry = get_registry()
    tasks, problem = tasks_or_problem(data.manifest, registry)
    if problem:
        problems.append(problem + "; instructions and target decks are not shown")
    budget = None
    if render:

        def make_renderer() -> Any:
            nonlocal components
            from pptarena.run.configuration.components import Components

            components = Components(run_config(data.manifest, registry), registry)
            return components.renderer()

        budget = RenderBudget(make_renderer, max_renders)
    out = Path(out) if out else run_dir / REPORT_NAME
    out.parent.mkdir(parents=True, exist_ok=True)  # --out into a folder not made yet
    try:
        from pptarena.report.index import HtmlParts, choose_layout, write_index_and_pages

        if choose_layout(layout, len(data.rows)) == "pages":
            parts = HtmlParts(CSS, table_html, plots_html, task_html, _anchor)
            page = write_index_and_pages(data, tasks, budget, problems, out, parts, workers)
        else:
            page = render_page(data, tasks, budget, problems, out.parent)
    finally:
        if components is not None:
            components.close()
    from pptarena.trust.redact import redact_text

    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(redact_text(page), encoding="utf-8")
    os.replace(tmp, out)
    return out
