"""The ``arena view`` ASGI app (Starlette): runs, run page, task table, pair page, comparison, files,
campaign pages and the labelling workbench (:mod:`pptarena.view.labelling`).

Pages are Jinja2 templates with autoescape on; the HTML fragments inserted as they are come from
:mod:`pptarena.report` (the pieces of ``report.html``, which escape every text they show) and pass
through the redactor like ``report.html`` does. Access rules: :mod:`pptarena.view.security`.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pptarena.run.rundir import RENDERS
from pptarena.view.files import file_response
from pptarena.view.runindex import Query
from pptarena.view.runs import RunState, find_runs
from pptarena.view.security import COOKIE, SECURITY_HEADERS, Access, Session, host_allowed, safe_file

HERE = Path(__file__).parent
PER_PAGE = 50


class ViewState:
    """What the app serves: runs, campaigns and access rules."""

    def __init__(
        self,
        paths: list[Path],
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        campaigns: list[Path] | None = None,
        render: bool = True,
        admin_token: str | None = None,
    ):
        from pptarena.label.campaign import find_campaigns
        from pptarena.label.store import CampaignError
        from pptarena.view.labelling import CampaignState

        self.host, self.port = host, port
        self.access = Access(host, admin_token)
        self.runs = {s.id: s for s in (RunState(p, render=render) for p in find_runs(paths))}
        #: one line per thing not served as asked (a read-only folder), printed by ``arena view``
        self.warnings: list[str] = []
        for run in self.runs.values():
            if render and not os.access(run.path, os.W_OK):
                self.warnings.append(
                    f"{run.path} is read-only: slides it has no render of are not rendered "
                    "(the pages say where; --no-render silences this)"
                )
        # index every run now, not on its first page view (one thread: the plugin registry is loaded once)
        threading.Thread(target=_warm_up, args=(list(self.runs.values()),), daemon=True).start()
        given = [Path(x).resolve() for x in campaigns or []]
        found = [Path(f).resolve() for run in self.runs.values() for f in find_campaigns(run.path)]
        self.campaigns: dict[str, Any] = {}
        for f in dict.fromkeys(given + found):
            try:
                c = CampaignState.open(f, self)
            except CampaignError as exc:
                if os.access(f.parent, os.W_OK):
                    raise
                # SQLite opens a campaign for writing (labels, its journal beside it): a read-only folder
                why = (
                    f"cannot write into {f.parent} (read-only): copy {f.name} to a writable folder and "
                    "serve it with --campaign FILE"
                )
                if f in given:
                    raise CampaignError(why) from exc
                self.warnings.append(f"campaign {f} is not served: {why}")
                continue
            self.campaigns[c.id] = c
        env = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True)
        )
        env.filters["urlencode"] = lambda s: __import__("urllib.parse").parse.quote(str(s), safe="")
        for name in env.list_templates():  # compiled now, not on the first page view
            env.get_template(name)
        self.env = env

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        """A template rendered (and redacted like ``report.html``)."""
        from pptarena.redact import redact_text

        html = self.env.get_template(name).render(**ctx)
        return HTMLResponse(redact_text(html), status_code=status)

    def error(self, status: int, message: str) -> HTMLResponse:
        """An error page."""
        return self.page("error.html", status, title=f"{status}", message=message, page="error")


def _warm_up(runs: list[RunState]) -> None:
    """Index the runs and build their tables' arrays, then load their tasks (plugins, dataset), before
    the first pages ask for them."""
    for run in runs:
        run.index.refresh()
        run.index.arrays()
    for run in runs:
        try:
            run.tasks()
        except Exception:  # noqa: BLE001 - the pair page reports the problem when it asks again
            pass


def _session(request: Request) -> Session | None:
    state: ViewState = request.app.state.view
    return state.access.session(request.cookies.get(COOKIE))


def _browse_guard(request: Request) -> Response | None:
    state: ViewState = request.app.state.view
    if state.access.may_browse(_session(request)):
        return None
    return state.error(403, "This server needs a token: open the link printed when it started.")


def _run(request: Request) -> RunState | None:
    return request.app.state.view.runs.get(request.path_params.get("rid", ""))


def _guarded_run(
    request: Request, not_found: Callable[[], Response]
) -> tuple[RunState, None] | tuple[None, Response]:
    """The run a page names, behind the browse guard: ``(run, None)``, or ``(None, response)`` to
    return (the guard's refusal, or ``not_found()`` when the id names no run)."""
    if (denied := _browse_guard(request)) is not None:
        return None, denied
    run = _run(request)
    if run is None:
        return None, not_found()
    return run, None


def absolutize(html: str, prefix: str) -> str:
    """Point the relative ``src``/``href`` links of a report fragment (relative to a run folder) at
    ``prefix`` (the run's file route)."""
    return re.sub(r'(\s(?:src|href)=")(?![a-z]+:|/|#)', lambda m: m.group(1) + prefix, html)


# ---------------------------------------------------------------------------------------------- pages


async def runs_page(request: Request) -> Response:
    """Every run served, and the campaigns."""
    state: ViewState = request.app.state.view
    if (denied := _browse_guard(request)) is not None:
        return denied
    for r in state.runs.values():
        r.index.refresh()
    return state.page(
        "runs.html",
        title="runs",
        page="runs",
        runs=[r.to_json() for r in state.runs.values()],
        campaigns=[c.to_json() for c in state.campaigns.values()],
    )


def parse_query(params: Any) -> Query:
    """A :class:`Query` from URL parameters (bad values ignored)."""
    sort = str(params.get("sort") or "line")
    desc = sort.startswith("-")
    try:
        dis = float(params["dis"]) if params.get("dis") not in (None, "") else None
    except ValueError:
        dis = None
    try:
        page = max(0, int(params.get("page") or 0))
    except ValueError:
        page = 0
    return Query(
        status=str(params.get("status") or "")[:100],
        agent=str(params.get("agent") or "")[:300],
        text=str(params.get("q") or "")[:300],
        min_disagreement=dis,
        sort=sort.lstrip("-")[:300] or "line",
        descending=desc,
        page=min(page, 10_000_000),
        per_page=PER_PAGE,
    )


def _params(q: Query, **over: Any) -> dict[str, Any]:
    p = {
        "status": q.status,
        "agent": q.agent,
        "q": q.text,
        "dis": "" if q.min_disagreement is None else q.min_disagreement,
        "sort": ("-" if q.descending else "") + q.sort if q.sort != "line" or q.descending else "",
        "page": q.page or "",
    }
    p.update(over)
    return {k: v for k, v in p.items() if v not in ("", None, 0)}


async def run_page(request: Request) -> Response:
    """The run: latest results, leaderboard and comparisons, and the server-side task table."""
    state: ViewState = request.app.state.view
    run, refused = _guarded_run(request, lambda: state.error(404, "No such run."))
    if refused is not None:
        return refused
    run.index.refresh()
    summary, fresh = run.summary_html()
    q = parse_query(request.query_params)
    total, rows = run.index.query(q)
    info = run.to_json()
    info["judges_seen"] = list(run.index.judges)
    columns = [("task", "task"), ("agent", "agent"), ("status", "status"), ("epoch", "epoch")]
    columns += [(f"judge:{j}", j) for j in run.index.judges]
    columns += [("disagreement", "judge disagreement"), ("duration", "duration s")]
    sort_param = ("-" if q.descending else "") + q.sort
    sort_urls = {
        col: f"/r/{run.id}?" + urlencode(_params(q, sort=("-" + col) if sort_param == col else col, page=""))
        for col, _ in columns
    }
    pages = max(1, -(-total // PER_PAGE))
    base = f"/r/{run.id}?"
    return state.page(
        "run.html",
        title=run.name,
        page="run",
        run=info,
        summary=summary,
        fresh=fresh,
        latest=run.index.since(0, 10),
        seq=run.index.lines,
        counts=run.index.counts(),
        q=q,
        sort_param=sort_param,
        query_string=urlencode(_params(q)),
        rows=rows,
        total=total,
        first=q.page * PER_PAGE + 1,
        last=min(total, (q.page + 1) * PER_PAGE),
        columns=columns,
        sort_urls=sort_urls,
        prev_url=base + urlencode(_params(q, page=q.page - 1)) if q.page > 0 else None,
        next_url=base + urlencode(_params(q, page=q.page + 1)) if q.page + 1 < pages else None,
    )


async def table_api(request: Request) -> Response:
    """The task table as JSON (the live page redraws its rows from it)."""
    run, refused = _guarded_run(request, lambda: JSONResponse({"error": "no such run"}, status_code=404))
    if refused is not None:
        return refused
    run.index.refresh()
    q = parse_query(request.query_params)
    total, rows = run.index.query(q)
    return JSONResponse({"total": total, "rows": rows, "pairs": len(run.index), "seq": run.index.lines})


async def since_api(request: Request) -> Response:
    """Attempts whose lines were appended after line ``seq`` (polled by the open run page)."""
    run, refused = _guarded_run(request, lambda: JSONResponse({"error": "no such run"}, status_code=404))
    if refused is not None:
        return refused
    run.index.refresh()
    try:
        seq = int(request.query_params.get("seq") or 0)
    except ValueError:
        seq = 0
    summary, fresh = run.summary_html()
    return JSONResponse(
        {
            "rows": run.index.since(seq, 20),
            "seq": run.index.lines,
            "pairs": len(run.index),
            "summary_fresh": fresh,
        }
    )


async def summary_api(request: Request) -> Response:
    """The leaderboard part of the run page as HTML (fetched by the page once it is up to date)."""
    run, refused = _guarded_run(request, lambda: Response("no such run", status_code=404))
    if refused is not None:
        return refused
    from pptarena.redact import redact_text

    html, fresh = run.summary_html()
    return HTMLResponse(redact_text(html or ""), headers={"X-Summary-Fresh": "1" if fresh else "0"})


def pair_fragment(run: RunState, task_id: str, agent: str) -> tuple[str, str, list[str], list[str]]:
    """(pair HTML, instruction, problems, other agents) for one agent's attempts at one task,
    drawn by :func:`pptarena.report.html.pair_html` as in ``report.html``."""
    from pptarena.report.data import RunData
    from pptarena.report.html import pair_html
    from pptarena.run.summary_record import Summary

    rows = run.index.task_rows(task_id)
    tasks, problem = run.tasks()
    task = tasks.get(task_id)
    data = RunData(run.path, run.manifest(), rows, Summary())  # a pair section needs no summary
    with run.render_lock:  # one renderer per run, used by one request at a time
        body = pair_html(data, task, agent, task_id, run.budget(), run.path)
    others = sorted({r.agent for r in rows} - {agent})
    body += all_slides_html(run.path, data.pair_dir(agent, task_id))
    return (
        absolutize(body, f"/r/{run.id}/f/"),
        (task.instruction if task else ""),
        [problem] if problem else [],
        others,
    )


def all_slides_html(run_dir: Path, folder: Path) -> str:
    """Every rendered slide of the pair's decks, folded (the changed ones are shown above); links are
    relative to the run folder."""
    from pptarena.report.verdicts import rel_url

    found: dict[int, dict[str, Path]] = {}
    for role in ("original", "prediction", "target"):
        renders = folder / RENDERS / role
        if not renders.is_dir() or renders.is_symlink():
            continue
        for png in renders.glob("slide-*.png"):
            m = re.fullmatch(r"slide-(\d+)\.png", png.name)
            if m:
                found.setdefault(int(m.group(1)), {})[role] = png
    if not found:
        return ""
    cells = [
        '<div class="slides"><div></div><div class="h">original</div><div class="h">prediction</div>'
        '<div class="h">target</div>'
    ]
    for n in sorted(found):
        cells.append(f'<div class="num">slide {n}</div>')
        for role in ("original", "prediction", "target"):
            png = found[n].get(role)
            cells.append(
                f'<div><img loading="lazy" src="{rel_url(png, run_dir)}" alt="{role} slide {n}"></div>'
                if png is not None
                else '<div class="none">–</div>'
            )
    cells.append("</div>")
    return (
        f'<details class="all-slides"><summary>All rendered slides ({len(found)})</summary>'
        f"{''.join(cells)}</details>"
    )


async def pair_page(request: Request) -> Response:
    """One agent's attempt(s) at one task: slides, edits, verdicts, log, every epoch."""
    state: ViewState = request.app.state.view
    run, refused = _guarded_run(request, lambda: state.error(404, "No such run."))
    if refused is not None:
        return refused
    task_id = str(request.query_params.get("task") or "")
    agent = str(request.query_params.get("agent") or "")
    run.index.refresh()
    if not task_id or not any(r.agent == agent for r in run.index.task_rows(task_id)):
        return state.error(404, "This run has no such attempt.")
    from starlette.concurrency import run_in_threadpool

    body, instruction, problems, others = await run_in_threadpool(pair_fragment, run, task_id, agent)
    return state.page(
        "pair.html",
        title=f"{task_id} · {agent}",
        page="pair",
        run=run.to_json(),
        task_id=task_id,
        agent=agent,
        body=body,
        instruction=instruction,
        problems=problems,
        others=others,
    )


async def compare_page(request: Request) -> Response:
    """Two runs (or two agents) on the same task, side by side."""
    state: ViewState = request.app.state.view
    if (denied := _browse_guard(request)) is not None:
        return denied
    p = request.query_params
    task_id = str(p.get("task") or "")
    sides = []
    instruction = ""
    from starlette.concurrency import run_in_threadpool

    for key in ("a", "b"):
        run = state.runs.get(str(p.get(key) or ""))
        if run is None:
            return state.error(404, f"No such run ({key}).")
        run.index.refresh()
        rows = run.index.task_rows(task_id)
        agent = str(p.get(f"agent_{key}") or "") or (rows[0].agent if rows else "")
        if not any(r.agent == agent for r in rows):
            return state.error(404, f"Run {run.name} has no attempt of agent {agent!r} at this task.")
        body, instr, _, _ = await run_in_threadpool(pair_fragment, run, task_id, agent)
        instruction = instruction or instr
        sides.append({"run": run.to_json(), "agent": agent, "body": body})
    return state.page(
        "compare.html", title=f"compare {task_id}", page="compare", task_id=task_id, sides=sides,
        instruction=instruction,
    )  # fmt: skip


async def run_file(request: Request) -> Response:
    """A file inside a run folder (images inline, text as plain text, anything else as a download)."""
    state: ViewState = request.app.state.view
    run, refused = _guarded_run(request, lambda: state.error(404, "No such run."))
    if refused is not None:
        return refused
    path = safe_file(run.path, request.path_params["path"])
    if path is None:
        return state.error(404, "No such file in this run.")
    return file_response(path)


async def report_css(request: Request) -> Response:
    """The CSS of ``report.html`` (so the report's fragments look the same here)."""
    from pptarena.report.html import CSS

    return Response(CSS, media_type="text/css")


async def login(request: Request) -> Response:
    """Trade a token from a printed link for a session cookie, then drop the token from the URL."""
    state: ViewState = request.app.state.view
    token = str(request.query_params.get("token") or "")
    session, target = None, "/"
    if token and state.access.is_admin_token(token):
        session = Session("admin")
    else:
        for c in state.campaigns.values():
            who = c.campaign.annotator_for_token(token) if token else None
            if who is not None:
                session, target = Session("annotator", campaign=c.id, annotator=who), f"/c/{c.id}/label"
                break
    if session is None:
        return state.error(403, "This link's token is not valid.")
    sid = state.access.open_session(session)
    resp = RedirectResponse(target, status_code=303)
    resp.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/")
    return resp


# ---------------------------------------------------------------------------------------------- app


class SecurityMiddleware:
    """Adds the security headers to every response and refuses foreign ``Host`` headers (pure ASGI)."""

    def __init__(self, app: Any, state: ViewState):
        self.app = app
        self.state = state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not host_allowed(host, self.state.host, self.state.port):
            await Response("unknown host", status_code=421)(scope, receive, send)
            return
        started = time.perf_counter()

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                extra.append(
                    (b"server-timing", f"app;dur={1000 * (time.perf_counter() - started):.1f}".encode())
                )
                message["headers"] = list(message.get("headers") or []) + extra
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(state: ViewState) -> Any:
    """The ASGI app serving ``state``."""
    from pptarena.view.labelling import routes as label_routes

    routes = [
        Route("/", runs_page),
        Route("/login", login),
        Route("/static/report.css", report_css),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        Route("/compare", compare_page),
        Route("/r/{rid}", run_page),
        Route("/r/{rid}/api/table", table_api),
        Route("/r/{rid}/api/since", since_api),
        Route("/r/{rid}/api/summary", summary_api),
        Route("/r/{rid}/pair", pair_page),
        Route("/r/{rid}/f/{path:path}", run_file),
        *label_routes(),
    ]
    app = Starlette(routes=routes)
    app.state.view = state
    return SecurityMiddleware(app, state)
