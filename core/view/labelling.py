"""The labelling workbench of ``arena view``: an annotator's queue, one item per page, label writes.

An item page shows what a person needs: the instruction, the changed slides of original,
prediction(s) and target, and the edits as text. In a blind campaign (the default) nothing on the
page names an agent or shows a judge's score: slide images are served through opaque item URLs
(``/c/<campaign>/img/<item>/<left|right>/<role>/<n>``), never through the run folder's paths, which
hold agent names. Items are named by their public ids (:meth:`pptarena.label.store.Campaign.public_id`,
random per campaign), never by their numbers, which follow the (task, agent) order; a pairwise
label is shown and answered in left/right terms as that annotator saw the item, and version
numbers count that annotator's versions of the item only. Which routes an annotator's session may
reach at all is decided before any of these run (:class:`pptarena.view.app.RoleGuard`). Writes
go through :meth:`pptarena.label.store.Campaign.append` (appended and synced before the answer),
after the checks of :mod:`pptarena.view.security`.

A campaign with instructions (:mod:`pptarena.label.instructions`) shows them first
(``/c/<campaign>/instructions``): the label page sends an annotator there before their first item,
and again once when the instructions changed after their last label; every label page links to
them. The campaign page's statistics are cached until the store changes
(:meth:`CampaignState.stats`).

Why it is long: every route of the workbench is here because all of them translate between the
campaign's view of an item (sides ``a``/``b``, item numbers, label ids) and what one annotator sees
(left/right as shown to them, public ids, their own version numbers); keeping that translation in one
module is what keeps a blind campaign blind.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from pptarena.label.scales import ABSOLUTE_SCALES
from pptarena.label.store import Campaign, CampaignError, Item
from pptarena.view.files import file_response
from pptarena.view.security import ADMIN_SESSION_ENDED, COOKIE, SESSION_ENDED, same_origin

MAX_BODY = 64 * 1024
SCALE_TITLES = {"if": "Instruction following", "vq": "Visual quality"}
MAX_CACHED_VIEWS = 256
CAMPAIGN_PAGE_BOOTSTRAP = 300
"""Bootstrap resamples of the campaign page's intervals (``arena label stats`` defaults to 1000)."""
STALE_PAGE = (
    "This page belongs to an earlier session (your link was opened again since): reload the page, "
    "or open your link again. Nothing was saved."
)


def campaign_id(path: Path) -> str:
    """The short stable id of a campaign file (for URLs and its session cookie)."""
    return hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:12]


class CampaignState:
    """One campaign served: its file and a small cache of item slide views."""

    def __init__(self, campaign: Campaign, view: Any):
        self.campaign = campaign
        self.view = view
        self.id = campaign_id(campaign.path)
        self._views: OrderedDict[tuple[int, str], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._stats: tuple[Any, dict[str, Any], str] | None = None
        self._stats_lock = threading.Lock()
        self._instructions: tuple[tuple[int, int], str] | None = None

    @classmethod
    def open(cls, path: Path, view: Any) -> CampaignState:
        """Open a campaign file for serving."""
        return cls(Campaign.open(path), view)

    def to_json(self) -> dict[str, Any]:
        """What the runs page lists."""
        c = self.campaign
        return {
            "id": self.id,
            "name": c.name,
            "protocol": c.protocol,
            "blind": c.blind,
            "items": len(c.items),
            "annotators": c.annotators,
            "path": str(c.path),
        }

    def stats_marker(self) -> tuple[Any, ...]:
        """What the campaign page's statistics depend on, cheaply: the store's change marker
        (:meth:`pptarena.label.store.Campaign.change_marker`) and the size and modification time of
        each campaign run's ``results.jsonl`` (the judges' scores the labels are compared with)."""
        from pptarena.run.folder.rundir import RESULTS

        runs = []
        for run in sorted(set(self.campaign.runs.values())):
            try:
                st = (Path(run) / RESULTS).stat()
                runs.append((run, st.st_size, st.st_mtime_ns))
            except OSError:
                runs.append((run, None, None))
        return (self.campaign.change_marker(), tuple(runs))

    def stats(self) -> tuple[dict[str, Any], str]:
        """The campaign page's statistics and their text (:func:`pptarena.label.stats.campaign_stats`
        with 300 bootstrap resamples), computed again only when :meth:`stats_marker` changed since
        the last computation; one computation at a time (a second request waits for it)."""
        from pptarena.label import stats as label_stats

        with self._stats_lock:
            marker = self.stats_marker()
            if self._stats is not None and self._stats[0] == marker:
                return self._stats[1], self._stats[2]
            got = label_stats.campaign_stats(self.campaign, n_boot=CAMPAIGN_PAGE_BOOTSTRAP)
            text = label_stats.stats_text(got)
            self._stats = (marker, got, text)
            return got, text

    def instructions(self) -> tuple[Any, str]:
        """``(current instructions or None, their HTML)``: the campaign's instructions rendered
        safely (:func:`pptarena.label.instructions.render_markdown`), in a blind campaign with every
        agent and judge name blanked out first (:func:`pptarena.label.instructions.hidden_names`);
        rendered once per version (and again when items were added)."""
        from pptarena.label.instructions import current_instructions, hidden_names, render_markdown

        ins = current_instructions(self.campaign)
        if ins is None or ins.text is None:
            return None, ""
        key = (ins.version, max(self.campaign.items, default=0))  # items added later may name agents
        cached = self._instructions
        if cached is not None and cached[0] == key:
            return ins, cached[1]
        text = _scrub(ins.text, hidden_names(self.campaign)) if self.campaign.blind else ins.text
        html = render_markdown(text)
        self._instructions = (key, html)
        return ins, html

    def run_state(self, run: str) -> Any:
        """The served :class:`pptarena.view.runs.RunState` of a campaign run (opened when not served)."""
        return self.view.run_for(Path(run))

    def side_view(self, item: Item, side: str) -> tuple[Any, str]:
        """(PairView of one side of an item, the task's instruction), computed once and cached."""
        key = (item.id, side)
        with self._lock:
            if key in self._views:
                self._views.move_to_end(key)
                return self._views[key]
        from pptarena.report.renders import pair_decks, pair_view
        from pptarena.run.folder.rundir import RunDir
        from pptarena.view.runindex import attempt_row

        run_path = item.run if side == "a" else (item.run_b or item.run)
        agent = item.agent if side == "a" else (item.agent_b or "")
        epoch = item.epoch if side == "a" else (item.epoch_b or 1)
        run = self.run_state(run_path)
        run.index.refresh()
        row = attempt_row(run.index, item.task_id, agent, epoch)
        tasks, _ = run.tasks()
        task = tasks.get(item.task_id)
        if row is None:
            from pptarena.report.renders import PairView

            got = (PairView(notes=["this attempt is no longer in the run"]), "")
        else:
            folder = RunDir(run.path).attempt(agent, item.task_id, epoch)
            decks = pair_decks(run.path, folder, row, task)
            with run.render_lock:
                got = (pair_view(decks, run.budget()), task.instruction if task else "")
        with self._lock:
            self._views[key] = got
            while len(self._views) > MAX_CACHED_VIEWS:
                self._views.popitem(last=False)
        return got


def _slides(view: Any, url: str) -> str:
    """The changed slides side by side, images through the item's opaque URLs (``url`` + role/n)."""
    from pptarena.report.html import slide_grid

    return slide_grid(
        view,
        lambda role, n, _img: f"{url}/{role}/{n}",
        empty="No slide was edited in this prediction or in the target.",
    )


async def _annotator(request: Request) -> tuple[CampaignState | None, str | None, Any, bool]:
    """``(campaign, annotator, session, stale)`` of the URL's campaign (looked for again when it is
    not served yet): annotator and session when the request carries that campaign's annotator
    session (:func:`pptarena.view.security.campaign_cookie`); else annotator None, session the
    admin's (or None), and ``stale`` when the campaign's cookie was sent but opens no session of it."""
    view = request.app.state.view
    c = await view.find("campaigns", request.path_params.get("cid", ""))
    if c is None:
        return None, None, None, False
    session, stale = view.access.campaign_session(request.cookies, c.id)
    if session is None:
        return c, None, view.access.session(request.cookies.get(COOKIE)), stale
    return c, session.annotator, session, False


def _sides(c: CampaignState, item: Item, swapped: bool) -> list[tuple[str, str]]:
    """(screen side, campaign side) pairs in the order the annotator sees them."""
    if c.campaign.protocol != "pairwise":
        return [("left", "a")]
    return [("left", "b"), ("right", "a")] if swapped else [("left", "a"), ("right", "b")]


def _scrub(text: str, names: list[str]) -> str:
    """``text`` with every agent name of the item replaced (blind campaigns)."""
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "[hidden]")
    return text


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _on_screen(c: CampaignState, item: Item, swapped: bool, fields: dict[str, Any] | None) -> Any:
    """``fields`` as the annotator saw the item: a pairwise choice of the campaign's ``a``/``b`` as
    ``left``/``right`` (the letters are never shown: A is the first agent in the campaign's order)."""
    if not fields or c.campaign.protocol != "pairwise" or fields.get("choice") not in ("a", "b"):
        return fields
    side = next(screen for screen, x in _sides(c, item, swapped) if x == fields["choice"])
    return {**fields, "choice": side}


def _own_history(c: CampaignState, who: str, item: Item, swapped: bool) -> list[dict[str, Any]]:
    """The annotator's versions of an item, numbered from 1 for them alone, in screen terms (an
    undo names the version it undid by that number, never by the file's label id)."""
    from pptarena.label.store import UNDO_NOTE

    versions = c.campaign.history(who, item.id)
    number = {v.id: k for k, v in enumerate(versions, 1)}
    out = []
    for k, v in enumerate(versions, 1):
        note = v.note
        if note.startswith(UNDO_NOTE):
            undone = note[len(UNDO_NOTE) :]
            n = number.get(int(undone)) if undone.isdecimal() else None
            note = f"undo of version {n}" if n is not None else "undo"
        fields = _on_screen(c, item, swapped, v.fields)
        out.append(
            {
                "version": k,
                "when": _when(v.created_at),
                "text": json.dumps(fields) if fields else "(cleared)",
                "note": note,
            }
        )
    return out


def _own_number(c: CampaignState, who: str, item: int, label_id: int) -> int:
    """The number of version ``label_id`` among the annotator's versions of the item (from 1)."""
    return sum(1 for v in c.campaign.history(who, item) if v.id <= label_id)


def _page_refusal(
    view: Any, c: CampaignState | None, who: str | None, session: Any, stale: bool, *, browse_ok: bool = False
) -> Response | None:
    """The page a request for an annotator's page gets instead (None: go on): no such campaign, a
    session that ended, or no annotator's session (unless ``browse_ok`` and the requester may browse)."""
    if c is None:
        return view.error(404, "No such campaign.")
    if stale:
        return view.error(403, SESSION_ENDED, session_ended=True)
    if who is None and not (browse_ok and view.access.may_browse(session)):
        return view.error(403, "Open this campaign with the link printed for you by `arena label new`.")
    return None


async def label_page(request: Request) -> Response:
    """One item of the annotator's queue (``?pos=N``; the first unlabelled one by default)."""
    view = request.app.state.view
    c, who, session, stale = await _annotator(request)
    refused = _page_refusal(view, c, who, session, stale)
    if refused is not None:
        return refused
    campaign = c.campaign
    queue = campaign.queue(who)
    current = campaign.current(who)
    ins, _ = await run_in_threadpool(c.instructions)
    if ins is not None and "pos" not in request.query_params and _instructions_first(session, ins, current):
        return RedirectResponse(f"/c/{c.id}/instructions", status_code=303)
    open_positions = [i for i, (item, _) in enumerate(queue) if (who, item) not in current]
    try:
        pos = int(request.query_params["pos"]) if "pos" in request.query_params else None
    except ValueError:
        pos = None
    if pos is None:
        pos = open_positions[0] if open_positions else max(0, len(queue) - 1)
    if not queue:
        return view.error(404, "Your queue is empty.")
    pos = min(max(0, pos), len(queue) - 1)
    item_id, swapped = queue[pos]
    item = campaign.items[item_id]
    public = campaign.public_id(item_id)
    sides, instruction, problems = [], "", []
    for screen, side in _sides(c, item, swapped):
        pv, instr = await run_in_threadpool(c.side_view, item, side)
        instruction = instruction or instr
        problems += [n for n in pv.notes if n not in problems]
        title = "The edited deck" if campaign.protocol == "absolute" else f"Prediction on the {screen}"
        sides.append(
            {
                "title": title,
                "short": screen if campaign.protocol == "pairwise" else "",
                "slides": _slides(pv, f"/c/{c.id}/img/{public}/{screen}"),
                "edits": pv.prediction_edits,
            }
        )
    if campaign.blind:  # text from decks and renderers may still name an agent (paths, messages)
        names = [n for n in (item.agent, item.agent_b) if n]
        instruction = _scrub(instruction, names)
        problems = [_scrub(p, names) for p in problems]
        for s in sides:
            s["edits"] = _scrub(s["edits"], names)
    mine = current.get((who, item_id))
    fields = mine.fields if mine else None
    current_side = None
    if fields and campaign.protocol == "pairwise":
        choice = fields.get("choice")
        current_side = (
            "tie" if choice == "tie" else next(s for s, x in _sides(c, item, swapped) if x == choice)
        )
    history = _own_history(c, who, item, swapped)
    base = f"/c/{c.id}/label?pos="
    reveal = f"{item.agent} (epoch {item.epoch})" + (
        f" vs {item.agent_b} (epoch {item.epoch_b})" if item.agent_b else ""
    )
    return view.page(
        "label.html",
        title=f"{campaign.name} · item {pos + 1}",
        page="label",
        campaign_id=c.id,
        campaign_name=campaign.name,
        annotator=who,
        item_id=public,
        protocol=campaign.protocol,
        csrf=session.csrf,
        position=pos,
        queue_len=len(queue),
        labelled=len(queue) - len(open_positions),
        prev_url=f"{base}{pos - 1}" if pos > 0 else "",
        next_url=f"{base}{pos + 1}" if pos + 1 < len(queue) else "",
        first_open_url=f"{base}{open_positions[0]}" if open_positions and open_positions[0] != pos else "",
        blind=campaign.blind,
        reveal=reveal,
        instruction=instruction,
        problems=problems,
        sides=sides,
        scales=[(k, SCALE_TITLES[k], anchors) for k, anchors in ABSOLUTE_SCALES.items()],
        current=fields,
        current_side=current_side,
        history=history,
        instructions_url=f"/c/{c.id}/instructions?pos={pos}" if ins is not None else "",
    )


def _instructions_first(session: Any, ins: Any, current: dict[Any, Any]) -> bool:
    """Whether the label page opens on the instructions instead: this session was not shown their
    current version yet, and the annotator has no label yet or none since they last changed."""
    if session.instructions_seen == ins.version:
        return False
    return not current or max(v.created_at for v in current.values()) < ins.created_at


async def instructions_page(request: Request) -> Response:
    """The campaign's instructions (``?pos=N``: the queue position to go back to), for its
    annotators, and for the admin / a local user (the same page an annotator sees)."""
    view = request.app.state.view
    c, who, session, stale = await _annotator(request)
    refused = _page_refusal(view, c, who, session, stale, browse_ok=True)
    if refused is not None:
        return refused
    ins, body = await run_in_threadpool(c.instructions)
    if ins is not None and who is not None:
        session.instructions_seen = ins.version
    try:
        pos = max(0, int(request.query_params["pos"])) if "pos" in request.query_params else None
    except ValueError:
        pos = None
    if pos is None and who is not None:  # the first unlabelled item (a position: never back here)
        current = c.campaign.current(who)
        queue = c.campaign.queue(who)
        pos = next((i for i, (item, _) in enumerate(queue) if (who, item) not in current), 0)
    start = f"/c/{c.id}/label?pos={pos}"
    return view.page(
        "instructions.html",
        title=f"{c.campaign.name} · instructions",
        page="instructions",
        campaign_name=c.campaign.name,
        annotator=who,
        body=body,
        updated=_when(ins.created_at) if ins is not None else "",
        start_url=start if who is not None else "",
        returning="pos" in request.query_params,
    )


async def item_image(request: Request) -> Response:
    """A slide image of an item, for its annotators (or the admin / a local user when not blind)."""
    view = request.app.state.view
    c, who, session, stale = await _annotator(request)
    if c is None:
        return view.error(404, "No such campaign.")
    if who is None:  # who may see images at all comes first: a refusal says nothing about the item
        if stale:  # an annotator's open page after a restart: say so, even to a local user
            return view.error(403, SESSION_ENDED, session_ended=True)
        if not view.access.may_browse(session):
            return view.error(403, "Open this campaign with the link printed for you.")
    try:
        n = int(request.path_params["n"])
    except ValueError:
        return view.error(404, "No such image.")
    item_id = c.campaign.item_for_public(request.path_params["item"])  # public ids only
    screen, role = request.path_params["side"], request.path_params["role"]
    item = c.campaign.items.get(item_id) if item_id is not None else None
    if item is None or screen not in ("left", "right") or role not in ("original", "prediction", "target"):
        return view.error(404, "No such image.")
    if who is not None:
        queue = dict(c.campaign.queue(who))
        if item_id not in queue:  # as if there were no such item (the ids of others' items stay unknown)
            return view.error(404, "No such image.")
        swapped = queue[item_id]
    else:
        swapped = False
    side = dict(_sides(c, item, swapped)).get(screen)
    if side is None:
        return view.error(404, "No such image.")
    pv, _ = await run_in_threadpool(c.side_view, item, side)
    path = pv.images.get(role, {}).get(n)
    if path is None or not Path(path).is_file():
        return view.error(404, "No such image.")
    return file_response(Path(path))


async def _write_checks(request: Request) -> tuple[Any, str, dict[str, Any]] | Response:
    view = request.app.state.view
    c, who, session, stale = await _annotator(request)
    if c is None:
        return JSONResponse({"error": "no such campaign"}, status_code=404)
    if stale:
        return JSONResponse({"error": SESSION_ENDED, "session_ended": True}, status_code=403)
    if who is None:
        return JSONResponse({"error": "a label needs your token's session"}, status_code=403)
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.scope["headers"]}
    if not same_origin(headers, request.url.scheme, headers.get("host", "")):
        return JSONResponse({"error": "cross-origin write refused"}, status_code=403)
    sent = headers.get("x-csrf-token")
    if not sent:
        return JSONResponse({"error": "missing CSRF token"}, status_code=403)
    if not hmac.compare_digest(sent.encode(), session.csrf.encode()):
        # a page of an earlier session (the link was opened again since) or a forgery: nothing written
        return JSONResponse({"error": STALE_PAGE, "session_ended": True}, status_code=403)
    body = await request.body()
    if len(body) > MAX_BODY:
        return JSONResponse({"error": "label too large"}, status_code=413)
    try:
        data = json.loads(body)
        if not isinstance(data, dict) or type(data.get("item")) not in (int, str):
            raise ValueError("no item")
    except ValueError:
        return JSONResponse({"error": "expected a JSON object with an item"}, status_code=400)
    _ = view
    # the item by its public id, and only an item of this annotator's queue (the error names neither)
    item_id = c.campaign.item_for_public(data["item"])
    swapped = dict(c.campaign.queue(who)).get(item_id) if item_id is not None else None
    if swapped is None:
        return JSONResponse({"error": "this item is not in your queue"}, status_code=400)
    return c, who, {**data, "item": item_id, "swapped": swapped}


async def label_api(request: Request) -> Response:
    """Append a label version (answered once it is on disk)."""
    got = await _write_checks(request)
    if isinstance(got, Response):
        return got
    c, who, data = got
    fields = data.get("fields")
    campaign: Campaign = c.campaign
    item = campaign.items[data["item"]]
    if campaign.protocol == "pairwise" and isinstance(fields, dict):
        if fields.get("choice") in ("left", "right"):
            fields = {**fields, "choice": dict(_sides(c, item, data["swapped"]))[fields["choice"]]}
        elif fields.get("choice") != "tie":
            # the campaign's own letters are not an answer from a page (they would tell A from B)
            return JSONResponse({"error": "choice: expected left, right or tie"}, status_code=400)
    seconds = data.get("seconds")
    try:
        seconds = None if seconds is None else float(seconds)
        v = await run_in_threadpool(campaign.append, who, item.id, fields, seconds)
    except (CampaignError, TypeError, ValueError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    number = await run_in_threadpool(_own_number, c, who, item.id, v.id)
    return JSONResponse({"version": number, "item": campaign.public_id(item.id)})


async def undo_api(request: Request) -> Response:
    """Append a version restoring the item's previous label."""
    got = await _write_checks(request)
    if isinstance(got, Response):
        return got
    c, who, data = got
    item = c.campaign.items[data["item"]]
    try:
        v = await run_in_threadpool(c.campaign.undo, who, item.id)
    except CampaignError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    number = await run_in_threadpool(_own_number, c, who, item.id, v.id)
    return JSONResponse(
        {
            "version": number,
            "item": c.campaign.public_id(item.id),
            "fields": _on_screen(c, item, data["swapped"], v.fields),
        }
    )


async def campaign_page(request: Request) -> Response:
    """Progress and agreement of a campaign (run pages' access rules: it names agents and judges);
    the statistics are cached until the labels change (:meth:`CampaignState.stats`)."""
    view = request.app.state.view
    c = await view.find("campaigns", request.path_params.get("cid", ""))
    if c is None:
        return view.error(404, "No such campaign.")
    sid = request.cookies.get(COOKIE)
    if not view.access.may_browse(view.access.session(sid)):
        if view.access.is_stale(sid):
            return view.error(403, ADMIN_SESSION_ENDED, session_ended=True)
        return view.error(403, "This server needs a token: open the link printed when it started.")
    stats, text = await run_in_threadpool(c.stats)
    ins, _ = await run_in_threadpool(c.instructions)
    return view.page(
        "campaign.html",
        title=c.campaign.name,
        page="campaign",
        c=c.to_json(),
        stats=stats,
        text=text,
        instructions_updated=_when(ins.created_at) if ins is not None else "",
    )


def routes() -> list[Route]:
    """The workbench's routes."""
    return [
        Route("/c/{cid}", campaign_page, name="campaign_page"),
        Route("/c/{cid}/instructions", instructions_page, name="instructions_page"),
        Route("/c/{cid}/label", label_page, name="label_page"),
        Route("/c/{cid}/img/{item}/{side}/{role}/{n}", item_image, name="item_image"),
        Route("/c/{cid}/api/label", label_api, methods=["POST"], name="label_api"),
        Route("/c/{cid}/api/undo", undo_api, methods=["POST"], name="undo_api"),
    ]
