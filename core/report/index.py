"""The index page of a large run's report: leaderboard, breakdowns, plots and a task table.

The task table holds one row per (agent, task) pair: task (linking to the task's own page,
:mod:`pptarena.report.pages`), agent, status, each judge's score, the judges' disagreement (the
spread, max − min, of the pair's judge scores when at least two judges scored it) and the duration.
It is filtered (status, agent, text in the task id, minimum disagreement) and sorted (any column)
in the browser: the rows travel as compact JSON inside the page (strings stored once, rows as
arrays of indices and numbers) and a small script draws one screenful at a time, so the page
stays small and shows at once even for tens of thousands of pairs. The filter state lives in the
URL's fragment (``report.html#status=agent_error&sort=-disagreement``), so a filtered view can be
bookmarked and shared. Everything is inline: no network, no external files.
"""

from __future__ import annotations

import json
from typing import Any

from pptarena.report.data import RunData
from pptarena.report.pages import HtmlParts, write_pages
from pptarena.report.top import page_top
from pptarena.report.verdicts import esc

PAGE_ROWS = 100  # rows drawn per screen of the task table
SINGLE_PAGE_MAX_PAIRS = 200  # "auto" layout: one page up to this many pairs, index + task pages above
LAYOUTS = ("auto", "single", "pages")

INDEX_CSS = """
.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:8px 0;font-size:13px}
.filters input[type=search]{width:220px}.filters input[type=number]{width:64px}
table.tasks th{cursor:pointer;user-select:none;white-space:nowrap}table.tasks td{white-space:nowrap}
table.tasks td.id{max-width:420px;overflow:hidden;text-overflow:ellipsis}th.asc:after{content:" ▲"}\
th.desc:after{content:" ▼"}
.pager{font-size:13px;margin:6px 0}.pager button{margin:0 4px}
"""

SCRIPT = """
(function () {
  const D = JSON.parse(document.getElementById('task-data').textContent);
  const J = D.judges.length, PAGE = D.page_rows;
  const rows = D.rows.map(function (r) {
    const scores = r.slice(4, 4 + J);
    const nums = scores.filter(function (s) { return typeof s === 'number'; });
    const dis = nums.length >= 2 ? Math.max.apply(null, nums) - Math.min.apply(null, nums) : null;
    return {task: D.tasks[r[0]][0], href: D.tasks[r[0]][1], agent: D.agents[r[1]],
            status: D.statuses[r[2]], duration: r[3], scores: scores, dis: dis};
  });
  const cols = [['task', 'task'], ['agent', 'agent'], ['status', 'status']]
    .concat(D.judges.map(function (j, i) { return ['s' + i, j]; }))
    .concat([['disagreement', 'judge disagreement'], ['duration', 'duration s']]);
  const el = function (id) { return document.getElementById(id); };
  const state = {status: '', agent: '', q: '', dis: '', sort: '', page: 0};
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    for (const k of ['status', 'agent', 'q', 'dis', 'sort']) state[k] = p.get(k) || '';
    state.page = Math.max(0, parseInt(p.get('page') || '0', 10) || 0);
    el('f-status').value = state.status; el('f-agent').value = state.agent;
    el('f-q').value = state.q; el('f-dis').value = state.dis;
  }
  function writeHash() {
    const p = new URLSearchParams();
    for (const k of ['status', 'agent', 'q', 'dis', 'sort']) if (state[k]) p.set(k, state[k]);
    if (state.page) p.set('page', String(state.page));
    history.replaceState(null, '', '#' + p.toString());
  }
  function key(r, c) {
    if (c === 'disagreement') return r.dis;
    if (c === 'duration') return r.duration;
    if (c[0] === 's' && c !== 'status') return r.scores[+c.slice(1)];
    return r[c];
  }
  function option(sel, value, text) {
    const o = document.createElement('option'); o.value = value; o.textContent = text; sel.appendChild(o);
  }
  function count(field) {
    const n = {}; rows.forEach(function (r) { n[r[field]] = (n[r[field]] || 0) + 1; }); return n;
  }
  const ns = count('status'), na = count('agent');
  option(el('f-status'), '', 'all statuses'); \
D.statuses.forEach(function (s) { option(el('f-status'), s, s + ' (' + (ns[s] || 0) + ')'); });
  option(el('f-agent'), '', 'all agents'); \
D.agents.forEach(function (a) { option(el('f-agent'), a, a + ' (' + (na[a] || 0) + ')'); });
  const head = el('task-head');
  cols.forEach(function (c) {
    const th = document.createElement('th'); th.textContent = c[1]; th.dataset.col = c[0];
    th.addEventListener('click', function () {
      state.sort = state.sort === c[0] ? '-' + c[0] : c[0]; state.page = 0; writeHash(); draw();
    });
    head.appendChild(th);
  });
  function fmt(x) { return typeof x === 'number' ? x.toFixed(3) : '–'; }
  function draw() {
    const q = state.q.toLowerCase(), \
minDis = state.dis === '' ? null : parseFloat(state.dis);
    let out = rows.filter(function (r) {
      return (!state.status || r.status === state.status) && (!state.agent || r.agent === state.agent) &&
        (!q || r.task.toLowerCase().indexOf(q) >= 0) && \
(minDis === null || isNaN(minDis) || (r.dis !== null && r.dis >= minDis));
    });
    if (state.sort) {
      const desc = state.sort[0] === '-', c = desc ? state.sort.slice(1) : state.sort;
      out = out.slice().sort(function (a, b) {
        const x = key(a, c), y = key(b, c);
        if (x === y) return 0; \
if (x === null || x === undefined) return 1; if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * (desc ? -1 : 1);
      });
    }
    const pages = Math.max(1, Math.ceil(out.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const body = el('task-body'); body.textContent = '';
    out.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (r) {
      const tr = document.createElement('tr'); tr.className = 'row-' + r.status;
      const td0 = document.createElement('td'); td0.className = 'id'; \
const a = document.createElement('a');
      // the pair's anchor on the task page, as report/html.py _anchor() spells it
      a.href = r.href + '#t-' + (r.task + '--' + r.agent).replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, 120);
      a.textContent = r.task; a.title = r.task; td0.appendChild(a); tr.appendChild(td0);
      const cells = [r.agent, null].concat(r.scores.map(fmt)).concat(\
[fmt(r.dis), r.duration === null ? '–' : String(r.duration)]);
      cells.forEach(function (text, i) {
        const td = document.createElement('td');
        if (i === 1) { const b = document.createElement('span'); \
b.className = 'badge ' + r.status; b.textContent = r.status; td.appendChild(b); }
        else td.textContent = text;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    el('task-count').textContent = out.length ? \
('pairs ' + (state.page * PAGE + 1) + '–' + Math.min(out.length, (state.page + 1) * PAGE) +
      ' of ' + out.length + ' shown (' + rows.length + ' in the run)') : \
'no pair matches (' + rows.length + ' in the run)';
    el('prev').disabled = state.page === 0; el('next').disabled = state.page >= pages - 1;
    Array.prototype.forEach.call(head.children, function (th) {
      th.className = state.sort === th.dataset.col ? 'asc' : \
(state.sort === '-' + th.dataset.col ? 'desc' : '');
    });
    document.documentElement.setAttribute('data-shown', String(out.length));
  }
  function changed() {
    state.status = el('f-status').value; state.agent = el('f-agent').value; state.q = el('f-q').value;
    state.dis = el('f-dis').value; state.page = 0; writeHash(); draw();
  }
  ['f-status', 'f-agent'].forEach(function (id) { el(id).addEventListener('change', changed); });
  ['f-q', 'f-dis'].forEach(function (id) { el(id).addEventListener('input', changed); });
  el('prev').addEventListener('click', function () { state.page--; writeHash(); draw(); });
  el('next').addEventListener('click', function () { state.page++; writeHash(); draw(); });
  window.addEventListener('hashchange', function () { readHash(); draw(); });
  readHash(); draw();
  document.documentElement.setAttribute('data-ready-ms', performance.now().toFixed(0));
})();
"""


def _number(value: Any) -> float | None:
    return round(float(value), 4) if isinstance(value, int | float) and not isinstance(value, bool) else None


def task_table_data(data: RunData, links: dict[str, str]) -> dict[str, Any]:
    """The task table as compact JSON: strings listed once, one array per pair.

    ``rows`` items are ``[task index, agent index, status index, duration, score of judge 1, ...]``;
    ``tasks`` items are ``[task id, link to its page]``.
    """
    agents = data.agents
    judges = data.judges
    statuses: list[str] = []
    task_index: dict[str, int] = {}
    tasks: list[list[str]] = []
    agent_index = {a: i for i, a in enumerate(agents)}
    status_index: dict[str, int] = {}
    rows = []
    for r in data.rows:
        tid = r.task_id
        ti = task_index.get(tid)
        if ti is None:
            ti = task_index[tid] = len(tasks)
            tasks.append([tid, links.get(tid, "")])
        status = str(r.status)
        si = status_index.get(status)
        if si is None:
            si = status_index[status] = len(statuses)
            statuses.append(status)
        rows.append(
            [ti, agent_index[r.agent], si, _number(r.duration_s), *(_number(r.score(j)) for j in judges)]
        )
    return {
        "agents": agents,
        "judges": judges,
        "statuses": statuses,
        "tasks": tasks,
        "rows": rows,
        "page_rows": PAGE_ROWS,
    }


def _json_for_script(obj: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no HTML comment openers)."""
    return (
        json.dumps(obj, separators=(",", ":"))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


def index_page(data: RunData, problems: list[str], links: dict[str, str], parts: HtmlParts) -> str:
    """The index page as a string (``links``: task id -> its page, relative to the index)."""
    table = task_table_data(data, links)
    body = [
        *page_top(
            data,
            problems,
            parts.table_html,
            parts.plots_html,
            f"{len(data.rows)} results, {len(table['tasks'])} tasks",
        ),
        f"<h2>Tasks ({len(table['tasks'])}) and pairs ({len(data.rows)})</h2>",
        '<p class="note">Each task has its own page (click its id): renders, edits, verdicts and logs '
        "of every agent. Judge disagreement: max − min of the pair's judge scores (two judges or more). "
        "Click a column to sort.</p>",
        '<div class="filters"><select id="f-status" aria-label="status"></select>'
        '<select id="f-agent" aria-label="agent"></select>'
        '<input id="f-q" type="search" placeholder="task id contains…" aria-label="task id contains">'
        '<label>disagreement ≥ <input id="f-dis" type="number" min="0" max="1" step="0.05" '
        'aria-label="minimum disagreement"></label></div>',
        '<div class="pager"><button id="prev" type="button">◀ previous</button>'
        '<span id="task-count"></span>'
        '<button id="next" type="button">next ▶</button></div>',
        '<table class="tasks small"><thead><tr id="task-head"></tr></thead>'
        '<tbody id="task-body"></tbody></table>',
        "<noscript><p>The task table needs JavaScript; "
        "the task pages are in the report/ folder.</p></noscript>",
        f'<script type="application/json" id="task-data">{_json_for_script(table)}</script>',
        f"<script>{SCRIPT}</script></main>",
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'>"
        f"<title>pptarena report — {esc(data.run_dir.name, 200)}</title>"
        f"<style>{parts.css}{INDEX_CSS}</style></head><body>{''.join(body)}</body></html>"
    )


def choose_layout(layout: str, pairs: int) -> str:
    """``"single"`` or ``"pages"`` for a run of ``pairs`` pairs (``layout`` is one of :data:`LAYOUTS`)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown report layout {layout!r} (expected one of {', '.join(LAYOUTS)})")
    if layout == "auto":
        return "pages" if pairs > SINGLE_PAGE_MAX_PAIRS else "single"
    return layout


def write_index_and_pages(
    data: RunData,
    tasks: dict[str, Any],
    budget: Any,
    problems: list[str],
    out: Any,
    parts: HtmlParts,
    workers: int = 1,
) -> str:
    """Write every task's page beside ``out`` (see :func:`pptarena.report.pages.write_pages`, which
    takes ``workers``); return the index page.
    """
    links = write_pages(data, tasks, budget, out, parts, workers)
    return index_page(data, problems, links, parts)
