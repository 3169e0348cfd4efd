"""HTML fragments for one pair in the report: judge verdicts (rubric trees as trees),
agent log, GUI trajectory.

All text from the run (explanations, model answers, log lines) is untrusted:
it is escaped and clipped here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pptarena.report.fileio import is_regular, open_text, read_regular, text_lines
from pptarena.report.pairfiles import PairFiles
from pptarena.report.plots import score_bar
from pptarena.run.folder.rundir import AGENT_LOG

MAX_TEXT = 4_000
MAX_LOG_EVENTS = 200
MAX_TREE_NODES = 400
MAX_STEPS = 60
SMALL_LOG_BYTES = 1 << 20  # logs up to this size are read at once, larger ones streamed


def clip(text: Any, limit: int = MAX_TEXT) -> str:
    """``str(text)`` cut to ``limit`` characters (with a marker)."""
    s = "" if text is None else str(text)
    return s if len(s) <= limit else s[:limit] + f" … ({len(s) - limit} more characters)"


def esc(text: Any, limit: int = MAX_TEXT) -> str:
    """Escaped and clipped text: ``html.escape(clip(text, limit))`` in one call (reports make
    hundreds of thousands of them).
    """
    s = text if type(text) is str else ("" if text is None else str(text))
    if len(s) > limit:
        s = s[:limit] + f" … ({len(s) - limit} more characters)"
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def rel_url(path: Path, base: Path) -> str:
    """A relative, URL-quoted link from ``base`` (the report's folder) to ``path``."""
    try:
        rel = Path(path).resolve().relative_to(Path(base).resolve())
    except ValueError:
        return Path(path).resolve().as_uri()
    return quote(rel.as_posix())


def score_cell(score: Any) -> str:
    """Score text with a small bar."""
    if not isinstance(score, int | float):
        return '<span class="muted">–</span>'
    return f'<span class="score">{float(score):.3f}</span> {score_bar(float(score))}'


def rubric_tree_html(node: dict[str, Any], budget: list[int] | None = None) -> str:
    """The scored rubric tree (``details.tree`` of the rubric judge) as nested lists with per-node scores."""
    budget = budget if budget is not None else [MAX_TREE_NODES]
    if budget[0] <= 0:
        return '<li class="muted">… (tree cut)</li>'
    budget[0] -= 1
    score = node.get("score")
    cls = (
        "ok"
        if isinstance(score, int | float) and score >= 0.999
        else ("part" if isinstance(score, int | float) and score > 0 else "bad")
    )
    crit = ' <span class="crit" title="critical">critical</span>' if node.get("is_critical") else ""
    kind = node.get("scorer") or node.get("kind") or ""
    head = (
        f'<span class="node-score {cls}">{float(score):.2f}</span> '
        f"<b>{esc(node.get('name') or node.get('node_id'), 200)}</b>{crit}"
        f' <span class="muted">{esc(kind, 40)}</span>'
        if isinstance(score, int | float)
        else f"<b>{esc(node.get('name'), 200)}</b>"
    )
    body = ""
    if node.get("description"):
        body += f'<div class="desc">{esc(node["description"], 600)}</div>'
    if node.get("reason"):
        body += f'<div class="reason">{esc(node["reason"], 1500)}</div>'
    if node.get("error"):
        body += f'<div class="err">{esc(node["error"], 800)}</div>'
    children = node.get("children") or []
    if children:
        body += (
            '<ul class="tree">'
            + "".join(rubric_tree_html(c, budget) for c in children if isinstance(c, dict))
            + "</ul>"
        )
    return f"<li>{head}{body}</li>"


def _dual_html(details: dict[str, Any]) -> str:
    parts = []
    if isinstance(details.get("if"), dict):
        d = details["if"]
        parts.append(f"<p><b>IF {esc(d.get('score'), 10)}/5</b> {esc(d.get('reason'))}</p>")
    if isinstance(details.get("vq"), dict):
        d = details["vq"]
        parts.append(
            f"<p><b>VQ {esc(d.get('score'), 10)}/5</b> ({esc(d.get('aggregate'), 10)} of chunks)</p><ul>"
        )
        for c in (d.get("chunks") or [])[:20]:
            if isinstance(c, dict):
                parts.append(
                    f"<li>slides {esc(c.get('slides'), 100)}: {esc(c.get('score'), 10)}/5 — "
                    f"{esc(c.get('reason'))}</li>"
                )
        parts.append("</ul>")
    return "".join(parts)


def _unit_note(u: dict[str, Any]) -> str:
    if u.get("damaged"):
        return "damaged"
    return "over-edited" if u.get("over_edited") else ""


def _structural_html(details: dict[str, Any]) -> str:
    units = [u for u in details.get("units") or [] if isinstance(u, dict)][:40]
    misses = [m for m in details.get("misses") or [] if isinstance(m, dict)][:40]
    if not units and not misses:
        return ""
    out = ""
    if misses:
        rows = "".join(
            f"<tr><td>{esc(m.get('unit'), 200)}</td>"
            f'<td><span class="miss">{esc(m.get("class"), 30)}</span></td>'
            f"<td>{esc(m.get('recall'), 10)}</td><td>{esc(m.get('evidence'), 400)}</td></tr>"
            for m in misses
        )
        out += (
            '<table class="small misses"><tr><th>missed object</th><th>miss</th>'
            "<th>recall</th><th>evidence</th></tr>"
            f"{rows}</table>"
        )
    if units:
        rows = "".join(
            f"<tr><td>{esc(u.get('unit'), 200)}</td><td>{esc(u.get('role'), 20)}</td>"
            f"<td>{esc(u.get('recall'), 10)}</td>"
            f"<td>{esc(u.get('precision'), 10)}</td><td>{esc(_unit_note(u), 20)}</td></tr>"
            for u in units
        )
        out += (
            '<table class="small"><tr><th>unit</th><th>role</th>'
            "<th>recall</th><th>precision</th><th>cost</th></tr>"
            f"{rows}</table>"
        )
    return out


def verdict_html(label: str, verdict: dict[str, Any]) -> str:
    """One judge's verdict: score, metrics, explanation and its details drawn by kind."""
    if not isinstance(verdict, dict):
        return ""
    if verdict.get("error"):
        return (
            f'<div class="verdict"><h5>{esc(label, 100)} '
            f'<span class="badge {esc(verdict.get("status", "judge_error"), 30)}">'
            f"{esc(verdict.get('status', 'error'), 30)}</span></h5>"
            f'<div class="err">{esc(verdict["error"])}</div></div>'
        )
    metrics = verdict.get("metrics") or {}
    mtext = ", ".join(f"{esc(k, 40)}={esc(v, 40)}" for k, v in list(metrics.items())[:16])
    details = verdict.get("details") or {}
    extra = ""
    if isinstance(details.get("tree"), dict):
        extra = (
            '<div class="rubric"><ul class="tree root">' + rubric_tree_html(details["tree"]) + "</ul></div>"
        )
    elif "if" in details or "vq" in details:
        extra = _dual_html(details)
    elif "units" in details or "misses" in details:
        extra = _structural_html(details)
    return (
        f'<div class="verdict"><h5>{esc(label, 100)} {score_cell(verdict.get("score"))}</h5>'
        f'<div class="metrics">{mtext}</div>'
        f'<div class="explanation">{esc(verdict.get("explanation"))}</div>{extra}</div>'
    )


def _event_summary(event: dict[str, Any]) -> str:
    rest = {k: v for k, v in event.items() if k not in ("t", "event")}
    return clip(json.dumps(rest, ensure_ascii=False, default=str), 600)


def _log_events(lines: Iterable[str], events: list[dict[str, Any]]) -> int:
    """Parse the first :data:`MAX_LOG_EVENTS` events of ``lines`` into ``events``; returns the line count."""
    total = 0
    for line in lines:
        total += 1
        if len(events) >= MAX_LOG_EVENTS:
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            ev = {"event": "(unreadable line)", "text": line[:200]}
        if isinstance(ev, dict):
            events.append(ev)
    return total


MAX_NOTES = 4_000


def prediction_notes(row: Any) -> str:
    """The note the agent handed in with its prediction (``Prediction.notes``), as the result line
    holds it (key ``notes``; empty when the line has none)."""
    notes = getattr(row, "notes", None)
    if notes is None:
        notes = (getattr(row, "model_extra", None) or {}).get("notes")
    return notes if isinstance(notes, str) else ""


def notes_html(row: Any) -> str:
    """The agent's note on its prediction (:func:`prediction_notes`), escaped and clipped; ``""``
    when it left none."""
    notes = prediction_notes(row).strip()
    if not notes:
        return ""
    return f'<div class="agent-notes"><b>Agent\'s notes:</b> {esc(notes, MAX_NOTES)}</div>'


def agent_log_html(folder: Path | str, files: PairFiles | None = None) -> str:
    """The pair's ``agent.log.jsonl`` as a table (first events; bounded), or ''.

    :param files: the folder held open (:class:`pptarena.report.pairfiles.PairFiles`): read
        through it (without it the file is opened by path, its folder taken as trusted).
    """
    path = os.path.join(folder, AGENT_LOG)
    events: list[dict[str, Any]] = []
    # most logs: one read
    data = read_regular(path, SMALL_LOG_BYTES) if files is None else files.read(AGENT_LOG, SMALL_LOG_BYTES)
    if data is not None:
        total = _log_events(text_lines(data), events)
    elif (
        fh := open_text(path) if files is None else files.open_text(AGENT_LOG)
    ) is not None:  # a large log: streamed, only its first events kept
        with fh:
            total = _log_events(fh, events)
    else:
        return ""
    if not events:
        return ""
    t0 = next((e["t"] for e in events if isinstance(e.get("t"), int | float)), None)
    rows = "".join(
        (
            f"<tr><td>{(e['t'] - t0):.1f}s</td><td>{esc(e.get('event'), 60)}</td>"
            f"<td><code>{escape(_event_summary(e))}</code></td></tr>"
        )
        if t0 is not None and isinstance(e.get("t"), int | float)
        else (
            f"<tr><td></td><td>{esc(e.get('event'), 60)}</td>"
            f"<td><code>{escape(_event_summary(e))}</code></td></tr>"
        )
        for e in events
    )
    more = (
        f'<p class="muted">{total - len(events)} more event(s) in agent.log.jsonl</p>'
        if total > len(events)
        else ""
    )
    return (
        f'<details class="log"><summary>Agent log ({total} event{"s" if total != 1 else ""})</summary>'
        f'<table class="small"><tr><th>t</th><th>event</th><th>data</th></tr>{rows}</table>{more}</details>'
    )


def trajectory_html(folder: Path, base: Path, files: PairFiles | None = None) -> str:
    """A GUI agent's ``trajectory/`` (steps with their screenshots), or ''.

    :param files: the folder held open (see :func:`agent_log_html`); without it, ``folder`` is the
        trusted root of the reads.
    """
    if files is None:
        fh = open_text(Path(folder) / "trajectory" / "trajectory.jsonl", root=folder)
    else:
        fh = files.open_text("trajectory/trajectory.jsonl")
    if fh is None:  # missing, or a link the agent left: never followed
        return ""
    items = []
    with fh:
        for i, line in enumerate(fh):
            if i >= MAX_STEPS:
                items.append('<li class="muted">… more steps in trajectory.jsonl</li>')
                break
            try:
                step = json.loads(line)
            except ValueError:
                continue
            if not isinstance(step, dict):
                continue
            img = ""
            shot = step.get("screenshot")
            if (
                isinstance(shot, str)
                and "/" not in shot
                and (
                    is_regular(folder / "trajectory" / shot, folder)
                    if files is None
                    else files.is_regular(f"trajectory/{shot}")
                )
            ):
                src = rel_url(folder / "trajectory" / shot, base)
                img = f'<img class="thumb" loading="lazy" src="{src}" alt="step {esc(step.get("step"), 10)}">'
            acts = "; ".join(
                str(a.get("kind", a)) if isinstance(a, dict) else str(a) for a in step.get("actions") or []
            )
            items.append(
                f"<li><b>step {esc(step.get('step'), 10)}</b> {esc(acts, 300)} "
                f"{esc(step.get('stop_reason') or '', 50)}"
                f'<div class="err">{esc("; ".join(map(str, step.get("errors") or [])), 500)}</div>{img}</li>'
            )
    return (
        '<details class="log"><summary>GUI trajectory</summary>'
        f'<ol class="traj">{"".join(items)}</ol></details>'
    )
