"""The adjudicator's page of ``arena view``: where a campaign's annotators disagree, and a form to
record the gold label that settles an item (:mod:`pptarena.label.adjudication`).

``GET /c/<campaign>/adjudicate`` lists the items labelled by two annotators or more whose labels
differ (``?all=1``: every such item), sorted by ``?sort=`` (one of
:data:`pptarena.label.adjudication.SORT_KEYS`), each annotator's label side by side with the item's
expected answer (known-answer items) and its gold label and history. ``POST`` to the same URL (a
form) appends a gold label version, or withdraws the gold label (``action=clear``).

**Who**: the admin only — on a loopback server a local user whose browser carries no annotator
session, elsewhere the admin's session (the link printed at start-up). A request carrying an
annotator's session (any campaign cookie, even one the server no longer knows) gets 403, page and
form alike. The page names agents (like the campaign page), so it is never an annotator's.

**Writes** are checked as the workbench's are (:mod:`pptarena.view.security`): a same-origin
request (``Origin``, or ``Sec-Fetch-Site: same-origin``) carrying the page's CSRF token (the form's
``csrf`` field). A local user on a loopback server has no session to hold a token, so the token is
an HMAC of the campaign id (and of the admin session's own token, when there is one) under a key
drawn when the process starts: a page of another site can neither read it nor guess it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from pptarena.label.adjudication import SORT_KEYS, current_gold, disagreements, gold_history, record_gold
from pptarena.label.gold_items import known_answers
from pptarena.label.scales import ABSOLUTE_SCALES, PAIRWISE_CHOICES
from pptarena.label.store import CampaignError
from pptarena.view.security import COOKIE, campaign_cookie, same_origin

MAX_FORM = 16 * 1024
_KEY = secrets.token_bytes(32)
ADMIN_ONLY = "Adjudication is for the admin: annotators' sessions cannot open it."
NEEDS_ADMIN = "This server needs a token: open the link printed when it started."


def csrf_token(cid: str, session: Any) -> str:
    """The CSRF token of the adjudicator page of campaign ``cid`` for ``session`` (see the module doc)."""
    bound = session.csrf if session is not None else ""
    return hmac.new(_KEY, f"adjudicate:{cid}:{bound}".encode(), hashlib.sha256).hexdigest()


def admin_check(request: Request) -> tuple[Any, Response | None]:
    """``(admin session or None, refusal or None)``: the request's admin session (None for a local
    user without one), or the 403 page of anyone else (see the module doc)."""
    view = request.app.state.view
    admin = view.access.session(request.cookies.get(COOKIE))
    if admin is not None and admin.kind == "admin":
        return admin, None
    prefix = campaign_cookie("")
    if any(name.startswith(prefix) for name in request.cookies):
        return None, view.error(403, ADMIN_ONLY)
    if view.access.loopback:
        return None, None
    return None, view.error(403, NEEDS_ADMIN)


async def _admin_campaign(request: Request) -> tuple[Any, Any, Response | None]:
    """``(admin session or None, campaign, None)`` for the admin (see :func:`admin_check`) and a
    served campaign named by the URL; else ``(None, None, refusal)``: the 403 of anyone else, or
    the 404 of a campaign that is not served. Both handlers of the page start with it."""
    admin, refused = admin_check(request)
    if refused is not None:
        return None, None, refused
    view = request.app.state.view
    c = await view.find("campaigns", request.path_params.get("cid", ""))
    if c is None:
        return None, None, view.error(404, "No such campaign.")
    return admin, c, None


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _field_rows(protocol: str) -> list[str]:
    return (
        ["choice", "comment"]
        if protocol == "pairwise"
        else [*ABSOLUTE_SCALES, "damage", "damage_slide", "comment"]
    )


def _query(sort: str, include_agreed: bool, **extra: Any) -> str:
    params = {"sort": sort if sort != "disagreement" else "", "all": "1" if include_agreed else "", **extra}
    return urlencode({k: v for k, v in params.items() if v not in ("", None)})


async def adjudicate_page(request: Request) -> Response:
    """The disagreement list of a campaign and the gold label forms (admin only)."""
    view = request.app.state.view
    admin, c, refused = await _admin_campaign(request)
    if refused is not None:
        return refused
    sort = str(request.query_params.get("sort") or "disagreement")
    if sort not in SORT_KEYS:
        sort = "disagreement"
    include_agreed = request.query_params.get("all") == "1"
    campaign = c.campaign
    rows = await run_in_threadpool(disagreements, campaign, sort=sort, include_agreed=include_agreed)
    known = await run_in_threadpool(known_answers, campaign)
    gold = await run_in_threadpool(current_gold, campaign)
    history = {}
    for g in await run_in_threadpool(gold_history, campaign):
        history.setdefault(g.item, []).append(
            {
                "version": g.id,
                "fields": g.fields,
                "by": g.adjudicator,
                "when": _when(g.created_at),
                "note": g.note,
            }
        )
    for r in rows:
        r["expected"] = known[r["item"]].expected if r["item"] in known else None
        r["history"] = history.get(r["item"], [])
        r["annotators"] = list(r["labels"])
        start = r["gold"]["fields"] if r["gold"] else next(iter(r["labels"].values()), {})
        r["start"] = start or {}
    try:
        saved = int(request.query_params.get("saved") or 0)
    except ValueError:
        saved = 0
    return view.page(
        "adjudicate.html",
        title=f"adjudicate {campaign.name}",
        page="adjudicate",
        c=c.to_json(),
        protocol=campaign.protocol,
        rows=rows,
        sort=sort,
        sorts=[
            (k, f"?{_query(k, include_agreed)}")
            for k in SORT_KEYS
            if k != "choice" or campaign.protocol == "pairwise"
        ],
        include_agreed=include_agreed,
        toggle_url=f"?{_query(sort, not include_agreed)}",
        gold_count=len(gold),
        known_count=len(known),
        fields=_field_rows(campaign.protocol),
        levels=list(range(5)),
        choices=PAIRWISE_CHOICES,
        csrf=csrf_token(c.id, admin),
        action=f"/c/{c.id}/adjudicate",
        saved=saved,
        error=str(request.query_params.get("error") or "")[:300],
    )


def _form_fields(protocol: str, form: dict[str, str]) -> dict[str, Any]:
    """The label fields of a posted form (validated later by the store's rules)."""
    if protocol == "pairwise":
        out: dict[str, Any] = {"choice": form.get("choice", "")}
    else:
        out = {}
        for key in ABSOLUTE_SCALES:
            value = form.get(key, "")
            out[key] = int(value) if value.isdigit() else value
        out["damage"] = form.get("damage", "")
        slide = form.get("damage_slide", "")
        if out["damage"] == "yes" and slide:
            out["damage_slide"] = int(slide) if slide.isdigit() else slide
    if form.get("comment"):
        out["comment"] = form["comment"]
    return out


async def adjudicate_post(request: Request) -> Response:
    """Record (or withdraw, ``action=clear``) an item's gold label from the page's form (admin only,
    same origin, with the page's CSRF token); back to the list once it is on disk."""
    view = request.app.state.view
    admin, c, refused = await _admin_campaign(request)
    if refused is not None:
        return refused
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.scope["headers"]}
    if not same_origin(headers, request.url.scheme, headers.get("host", "")):
        return view.error(403, "Cross-origin write refused.")
    body = await request.body()
    if len(body) > MAX_FORM:
        return view.error(413, "Form too large.")
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=50)
    except (UnicodeDecodeError, ValueError):
        return view.error(400, "Expected a form.")
    form = {k: v[0].strip() for k, v in parsed.items() if v}
    sent = form.get("csrf", "")
    if not sent or not hmac.compare_digest(sent.encode(), csrf_token(c.id, admin).encode()):
        return view.error(403, "Missing or stale CSRF token: reload the adjudication page.")
    campaign = c.campaign
    try:
        item = int(form.get("item", ""))
    except ValueError:
        return view.error(400, "The form names no item.")
    clear = form.get("action") == "clear"
    try:
        fields = None if clear else _form_fields(campaign.protocol, form)
        await run_in_threadpool(
            lambda: record_gold(
                campaign, item, fields, note=form.get("note", ""), by=form.get("by") or "admin"
            )
        )
    except (CampaignError, ValueError, TypeError) as exc:
        return view.error(400, f"Gold label not recorded: {exc}. Go back and correct the form.")
    sort = form.get("sort", "")
    query = _query(sort if sort in SORT_KEYS else "disagreement", form.get("all") == "1", saved=item)
    return RedirectResponse(f"/c/{c.id}/adjudicate?{query}#item-{item}", status_code=303)


def routes() -> list[Route]:
    """The adjudicator page's routes (mounted by :func:`pptarena.view.app.create_app`)."""
    return [
        Route("/c/{cid}/adjudicate", adjudicate_page, methods=["GET"], name="adjudicate_page"),
        Route("/c/{cid}/adjudicate", adjudicate_post, methods=["POST"], name="adjudicate_post"),
    ]
