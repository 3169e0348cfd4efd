"""The ``arena view`` ASGI app (Starlette): runs, run page, task table, pair page, comparison, files,
campaign pages and the labelling workbench (:mod:`pptarena.view.labelling`).

Pages are Jinja2 templates with autoescape on; the HTML fragments inserted as they are come from
:mod:`pptarena.report` (the pieces of ``report.html``, which escape every text they show) and pass
through the redactor like ``report.html`` does. Access rules: :mod:`pptarena.view.security`.

Why it is long: it holds three jobs: the server's state (which runs and campaigns are served, rescans
for new ones), the run-browsing pages and their JSON APIs, and the app's assembly with login and its two
access layers (:class:`SecurityMiddleware`, :class:`RoleGuard`). The run pages (:func:`run_page`,
:func:`pair_page`, :func:`compare_page`, the table APIs and their query helpers) could move to a module
of their own (not done yet).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
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
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Match, Mount, Route
from starlette.staticfiles import StaticFiles

from pptarena.run.folder.rundir import RENDERS
from pptarena.view.files import file_response
from pptarena.view.human_labels import PEOPLE, PeopleColumns, campaigns_of, people_columns
from pptarena.view.runindex import DISAGREE_GAP, Query
from pptarena.view.runs import RunState, find_runs, run_id
from pptarena.view.security import (
    ADMIN_SESSION_ENDED,
    ANNOTATOR_ANY_CAMPAIGN,
    ANNOTATOR_ROUTES,
    COOKIE,
    SECURITY_HEADERS,
    SESSION_ENDED,
    Access,
    Session,
    campaign_cookie,
    campaign_cookie_path,
    host_allowed,
    safe_file,
)

HERE = Path(__file__).parent
PER_PAGE = 50
#: the least time between two looks for new run folders and campaigns (:meth:`ViewState.rescan`)
RESCAN_EVERY = 1.0


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

        self.host, self.port = host, port
        self.access = Access(host, admin_token)
        self.paths = [Path(p) for p in paths]
        self.render = render
        self.runs: dict[str, RunState] = {}
        self.campaigns: dict[str, Any] = {}
        #: one line per thing not served as asked (a read-only folder), printed by ``arena view``
        self.warnings: list[str] = []
        self._scan_lock = threading.Lock()
        self._last_scan = float("-inf")
        self._unopened: dict[Path, tuple[int, int]] = {}  # campaign files that did not open: (mtime, size)
        self._add_runs(find_runs(self.paths))
        for run in self.runs.values():
            if render and not os.access(run.path, os.W_OK):
                self.warnings.append(
                    f"{run.path} is read-only: slides it has no render of are not rendered "
                    "(the pages say where; --no-render silences this)"
                )
        given = [Path(x).resolve() for x in campaigns or []]
        found = [Path(f).resolve() for run in self.runs.values() for f in find_campaigns(run.path)]
        for f in dict.fromkeys(given + found):
            self._open_campaign(f, given=f in given, strict=True)
        self._last_scan = time.monotonic()  # the look above counts as one
        env = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True)
        )
        env.filters["urlencode"] = lambda s: __import__("urllib.parse").parse.quote(str(s), safe="")
        for name in env.list_templates():  # compiled now, not on the first page view
            env.get_template(name)
        self.env = env

    # ------------------------------------------------------------------ discovery

    def _add_runs(self, paths: list[Path]) -> list[RunState]:
        """Serve the run folders of ``paths`` not served yet, and index them in the background."""
        new = [RunState(p, render=self.render) for p in paths if run_id(p) not in self.runs]
        if new:
            # a new dict, never a change of the one a request may be iterating
            self.runs = {**self.runs, **{r.id: r for r in new}}
            # index them now, not on their first page view (one thread: the plugin registry is loaded once)
            threading.Thread(target=_warm_up, args=(new,), daemon=True).start()
        return new

    def run_for(self, path: Path) -> RunState:
        """The served run of folder ``path``, served from now on when it was not (a campaign's run)."""
        rid = run_id(Path(path))
        if rid not in self.runs:
            with self._scan_lock:
                self._add_runs([Path(path).resolve()])
        return self.runs[rid]

    def _open_campaign(self, f: Path, *, given: bool = False, strict: bool = False) -> bool:
        """Serve campaign file ``f`` (resolved); False when it cannot be opened. At start-up
        (``strict``) a campaign that does not open stops the server, unless its folder is read-only
        (a warning); found later, it is skipped and tried again once the file changes (it may still
        be being written)."""
        from pptarena.label.store import CampaignError
        from pptarena.view.labelling import CampaignState, campaign_id

        if campaign_id(f) in self.campaigns:
            return True
        try:
            c = CampaignState.open(f, self)
        except CampaignError as exc:
            try:
                st = f.stat()
                self._unopened[f] = (st.st_mtime_ns, st.st_size)
            except OSError:
                pass
            if not strict:
                return False
            if os.access(f.parent, os.W_OK):
                raise
            # SQLite opens a campaign for writing (labels, its journal beside it): a read-only folder
            why = (
                f"cannot write into {f.parent} (read-only): copy {f.name} to a writable folder and "
                "serve it with --campaign FILE"
            )
            if given:
                raise CampaignError(why) from exc
            self.warnings.append(f"campaign {f} is not served: {why}")
            return False
        self._unopened.pop(f, None)
        self.campaigns = {**self.campaigns, c.id: c}
        return True

    def scan_due_in(self) -> float:
        """Seconds until :meth:`rescan` may look at the folders again (0: now)."""
        return max(0.0, self._last_scan + RESCAN_EVERY - time.monotonic())

    def rescan(self) -> bool:
        """Serve run folders and campaign files made since the server started: the runs below the
        folders it was given (:func:`find_runs`) and the campaigns in their ``campaigns/`` folders.
        At most once every :data:`RESCAN_EVERY` seconds (a walk of a few folders, never a read of a
        run); returns whether it looked."""
        from pptarena.label.campaign import find_campaigns

        with self._scan_lock:
            if self.scan_due_in() > 0:
                return False
            self._last_scan = time.monotonic()
            self._add_runs(find_runs(self.paths))
            for run in list(self.runs.values()):
                for f in find_campaigns(run.path):
                    f = f.resolve()
                    try:
                        st = f.stat()
                    except OSError:
                        continue
                    if self._unopened.get(f) == (st.st_mtime_ns, st.st_size):
                        continue  # did not open, unchanged since
                    self._open_campaign(f)
            return True

    async def find(self, table: str, key: str) -> Any:
        """``self.runs[key]`` or ``self.campaigns[key]`` (``table``), looking for new runs and
        campaigns first when it is not served (waiting for the next allowed :meth:`rescan`); None
        when it is still unknown."""
        got = getattr(self, table).get(key)
        if got is not None or not key:
            return got
        await self.rescan_soon()
        return getattr(self, table).get(key)

    async def rescan_soon(self) -> None:
        """:meth:`rescan` as soon as it is allowed (a wait of at most :data:`RESCAN_EVERY` seconds
        that holds no thread), for a request naming something not served yet."""
        wait = self.scan_due_in()
        if wait > 0:
            await asyncio.sleep(wait)
        await run_in_threadpool(self.rescan)

    # ------------------------------------------------------------------ pages

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        """A template rendered (and redacted like ``report.html``)."""
        from pptarena.trust.redact import redact_text

        html = self.env.get_template(name).render(**ctx)
        return HTMLResponse(redact_text(html), status_code=status)

    def error(self, status: int, message: str, *, session_ended: bool = False) -> HTMLResponse:
        """An error page (``session_ended``: the page of a stale session, see
        :data:`pptarena.view.security.SESSION_ENDED`)."""
        return self.page(
            "error.html",
            status,
            title="Session ended" if session_ended else f"{status}",
            message=message,
            page="error",
            session_ended=session_ended,
        )


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


def refusal(request: Request, status: int, message: str, *, session_ended: bool = False) -> Response:
    """A refusal: JSON ``{"error": message, "session_ended": ...}`` on API routes (``/api/`` in
    the path), an error page elsewhere."""
    state: ViewState = request.app.state.view
    if "/api/" in request.url.path:
        return JSONResponse({"error": message, "session_ended": session_ended}, status_code=status)
    return state.error(status, message, session_ended=session_ended)


def _browse_guard(request: Request) -> Response | None:
    state: ViewState = request.app.state.view
    if state.access.may_browse(_session(request)):
        return None
    if state.access.is_stale(request.cookies.get(COOKIE)):
        return refusal(request, 403, ADMIN_SESSION_ENDED, session_ended=True)
    return refusal(request, 403, "This server needs a token: open the link printed when it started.")


async def _guarded_run(
    request: Request, not_found: Callable[[], Response]
) -> tuple[RunState, None] | tuple[None, Response]:
    """The run a page names, behind the browse guard: ``(run, None)``, or ``(None, response)`` to
    return (the guard's refusal, or ``not_found()`` when the id names no run, even after a rescan)."""
    if (denied := _browse_guard(request)) is not None:
        return None, denied
    state: ViewState = request.app.state.view
    run = await state.find("runs", request.path_params.get("rid", ""))
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
    if state.scan_due_in() == 0:
        await run_in_threadpool(state.rescan)
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
    dis = _fraction(params.get("dis"))
    try:
        page = max(0, int(params.get("page") or 0))
    except ValueError:
        page = 0
    gap = _fraction(params.get("gap"))
    return Query(
        status=str(params.get("status") or "")[:100],
        agent=str(params.get("agent") or "")[:300],
        text=str(params.get("q") or "")[:300],
        min_disagreement=dis,
        disagree=str(params.get("disagree") or "")[:100],
        gap=DISAGREE_GAP if gap is None else min(1.0, max(0.0, gap)),
        sort=sort.lstrip("-")[:300] or "line",
        descending=desc,
        page=min(page, 10_000_000),
        per_page=PER_PAGE,
    )


def _fraction(value: Any) -> float | None:
    """A URL parameter as a finite number (None when absent or not one)."""
    if value in (None, ""):
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _params(q: Query, **over: Any) -> dict[str, Any]:
    p = {
        "status": q.status,
        "agent": q.agent,
        "q": q.text,
        "dis": "" if q.min_disagreement is None else f"{q.min_disagreement:g}",  # text: 0 is kept
        "disagree": q.disagree,
        "gap": f"{q.gap:g}" if q.disagree and q.gap != DISAGREE_GAP else "",
        "sort": ("-" if q.descending else "") + q.sort if q.sort != "line" or q.descending else "",
        "page": q.page or "",
    }
    p.update(over)
    return {k: v for k, v in p.items() if v not in ("", None, 0)}


async def _people(state: ViewState, run: RunState) -> PeopleColumns | None:
    """The people columns of the run's task table (:mod:`pptarena.view.human_labels`), None when no
    served campaign has items in the run."""
    served = campaigns_of(run.path, state.campaigns.values())
    if not served:
        return None
    return await run_in_threadpool(people_columns, run.index, run.path, served)


def _clamped_query(run: Any, q: Query, people: PeopleColumns | None = None) -> tuple[Query, int, list[Any]]:
    """The task table's rows for ``q``, a page past the end read as the last page (never "49951–48
    shown"), with the people columns when given (a ``disagree`` naming no campaign shown is
    dropped); the query as answered, the total and the rows."""
    extra = people.arrays if people is not None else None
    if q.disagree and (people is None or q.disagree not in people.ids):
        q = dataclasses.replace(q, disagree="")
    total, rows = run.index.query(q, extra)
    pages = max(1, -(-total // PER_PAGE))
    if q.page >= pages:
        q = dataclasses.replace(q, page=pages - 1)
        total, rows = run.index.query(q, extra)
    if people is not None:
        people.attach(rows)
    return q, total, rows


async def run_page(request: Request) -> Response:
    """The run: latest results, leaderboard and comparisons, and the server-side task table."""
    state: ViewState = request.app.state.view
    run, refused = await _guarded_run(request, lambda: state.error(404, "No such run."))
    if refused is not None:
        return refused
    run.index.refresh()
    summary, fresh = run.summary_html()
    people = await _people(state, run)
    q = parse_query(request.query_params)
    q, total, rows = _clamped_query(run, q, people)
    info = run.to_json()
    info["judges_seen"] = list(run.index.judges)
    shown = people.campaigns if people is not None else []
    columns = [("task", "task"), ("agent", "agent"), ("status", "status"), ("epoch", "epoch")]
    columns += [(f"judge:{j}", j) for j in run.index.judges]
    columns += [(f"{PEOPLE}{c.id}", f"people · {c.name} ({c.scale})") for c in shown]
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
        campaigns=shown,
        default_gap=DISAGREE_GAP,
        prev_url=base + urlencode(_params(q, page=q.page - 1)) if q.page > 0 else None,
        next_url=base + urlencode(_params(q, page=q.page + 1)) if q.page + 1 < pages else None,
    )


async def table_api(request: Request) -> Response:
    """The task table as JSON (the live page redraws its rows from it): the rows of the page asked,
    each with ``people`` per campaign shown (``campaigns``) when a served campaign has items in
    the run, and the query as answered (``query``: the page's URL parameters)."""
    state: ViewState = request.app.state.view
    run, refused = await _guarded_run(request, lambda: refusal(request, 404, "no such run"))
    if refused is not None:
        return refused
    run.index.refresh()
    people = await _people(state, run)
    q = parse_query(request.query_params)
    q, total, rows = _clamped_query(run, q, people)
    return JSONResponse(
        {
            "total": total,
            "page": q.page,
            "rows": rows,
            "pairs": len(run.index),
            "seq": run.index.lines,
            "campaigns": [c.to_json() for c in people.campaigns] if people is not None else [],
            "query": _params(q),
        }
    )


async def since_api(request: Request) -> Response:
    """Attempts whose lines were appended after line ``seq`` (polled by the open run page)."""
    run, refused = await _guarded_run(request, lambda: refusal(request, 404, "no such run"))
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
    run, refused = await _guarded_run(request, lambda: Response("no such run", status_code=404))
    if refused is not None:
        return refused
    from pptarena.trust.redact import redact_text

    html, fresh = run.summary_html()
    return HTMLResponse(redact_text(html or ""), headers={"X-Summary-Fresh": "1" if fresh else "0"})


def pair_fragment(run: RunState, task_id: str, agent: str) -> tuple[str, str, list[str], list[str]]:
    """(pair HTML, instruction, problems, other agents) for one agent's attempts at one task,
    drawn by :func:`pptarena.report.html.pair_html` as in ``report.html``."""
    from pptarena.report.data import RunData
    from pptarena.report.html import pair_html
    from pptarena.run.folder.summary_record import Summary

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
    run, refused = await _guarded_run(request, lambda: state.error(404, "No such run."))
    if refused is not None:
        return refused
    task_id = str(request.query_params.get("task") or "")
    agent = str(request.query_params.get("agent") or "")
    run.index.refresh()
    if not task_id or not any(r.agent == agent for r in run.index.task_rows(task_id)):
        return state.error(404, "This run has no such attempt.")
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
    for key in ("a", "b"):
        run = await state.find("runs", str(p.get(key) or ""))
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
    run, refused = await _guarded_run(request, lambda: state.error(404, "No such run."))
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
    if token and state.access.is_admin_token(token):
        resp = RedirectResponse("/", status_code=303)
        sid = state.access.open_session(Session("admin"))
        resp.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/")
        return resp
    session = _annotator_session(state, token) if token else None
    if session is None and token:  # perhaps the link of a campaign made since the last look
        await state.rescan_soon()
        session = _annotator_session(state, token)
    if session is None or session.campaign is None:
        return state.error(403, "This link's token is not valid.")
    sid = state.access.open_session(session)
    cid = session.campaign
    resp = RedirectResponse(f"/c/{cid}/label", status_code=303)
    # one cookie per campaign, sent to that campaign's routes only: other campaigns' sessions stay open
    resp.set_cookie(
        campaign_cookie(cid), sid, httponly=True, samesite="strict", path=campaign_cookie_path(cid)
    )
    return resp


def _annotator_session(state: ViewState, token: str) -> Session | None:
    """The annotator session a campaign token opens (None: no served campaign has it)."""
    for c in state.campaigns.values():
        who = c.campaign.annotator_for_token(token)
        if who is not None:
            return Session("annotator", campaign=c.id, annotator=who)
    return None


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


ANNOTATOR_REFUSED = "An annotator's link opens only their own queue."


class RoleGuard:
    """The route allow-list of annotators, for the whole app (pure ASGI, before the routes run).

    A request carrying an annotator's session and no admin session
    (:meth:`pptarena.view.security.Access.annotator_role`) is matched against the app's route table
    like the router does; unless the route's name is in
    :data:`pptarena.view.security.ANNOTATOR_ROUTES` (and its ``cid`` is the session's campaign, for
    the routes of one campaign), it is answered 403 and never reaches the route. A path no route
    matches goes on (to a 404).
    """

    def __init__(self, app: Starlette, state: ViewState):
        self.app = app
        self.state = state

    def _route(self, scope: dict[str, Any]) -> tuple[str | None, dict[str, Any]] | None:
        """``(route name, path params)`` of the route the router would pick (or the route that
        matches all but the method); None when no route matches the path."""
        partial = None
        for route in self.app.routes:
            match, child = route.matches(scope)
            if match == Match.FULL:
                return getattr(route, "name", None), dict(child.get("path_params") or {})
            if match == Match.PARTIAL and partial is None:
                partial = (getattr(route, "name", None), dict(child.get("path_params") or {}))
        return partial

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request({**scope, "app": self.app})  # the app is set for the refusal's page
        role = self.state.access.annotator_role(request.cookies)
        if role is not None:
            campaigns, stale = role
            found = self._route(scope)
            if found is not None:
                name, params = found
                allowed = name in ANNOTATOR_ROUTES and (
                    name in ANNOTATOR_ANY_CAMPAIGN or params.get("cid") in campaigns
                )
                if not allowed:
                    ended = stale and not campaigns
                    await refusal(
                        request, 403, SESSION_ENDED if ended else ANNOTATOR_REFUSED, session_ended=ended
                    )(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def create_app(state: ViewState) -> Any:
    """The ASGI app serving ``state``."""
    from pptarena.view.adjudication import routes as adjudication_routes
    from pptarena.view.labelling import routes as label_routes

    routes = [
        Route("/", runs_page),
        Route("/login", login, name="login"),
        Route("/static/report.css", report_css, name="report_css"),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        Route("/compare", compare_page),
        Route("/r/{rid}", run_page),
        Route("/r/{rid}/api/table", table_api),
        Route("/r/{rid}/api/since", since_api),
        Route("/r/{rid}/api/summary", summary_api),
        Route("/r/{rid}/pair", pair_page),
        Route("/r/{rid}/f/{path:path}", run_file),
        *label_routes(),
        *adjudication_routes(),
    ]
    app = Starlette(routes=routes)
    app.state.view = state
    return SecurityMiddleware(RoleGuard(app, state), state)
