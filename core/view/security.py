"""Who may see and write what in ``arena view``.

* On a loopback address (the default, 127.0.0.1) the run pages are open to local users; on any
  other address every page needs a session, opened by a link holding a token: the admin token
  printed at start-up, or an annotator's token printed by ``arena label new``. An annotator's
  session opens only their campaign's instructions, labelling pages and images.
* The ``Host`` header must name the server (no DNS rebinding onto a loopback server).
* Each campaign has its own annotator session cookie (:func:`campaign_cookie`, path ``/c/<id>``), so
  one browser can hold sessions of several campaigns at once; a session only opens the campaign it
  was made for, whatever cookie carries it. The admin's session is the cookie :data:`COOKIE`.
* **Blind by construction**: a request carrying an annotator's session (and no admin session) reaches
  only the routes of :data:`ANNOTATOR_ROUTES`, and only for the campaign of that session; every
  other route answers 403 (enforced for the whole app by :class:`pptarena.view.app.RoleGuard`,
  keyed on the route's name, so a route added later is closed to annotators until it is listed).
  A cookie of a campaign that names no session (the server restarted) counts as an annotator's.
* A session the server does not know (it restarted: sessions live in memory) or that belongs to
  another campaign gets :data:`SESSION_ENDED`, which tells the person to open their link again.
* A label write needs the annotator's session (cookie: ``HttpOnly``, ``SameSite=Strict``), the
  session's CSRF token in the ``X-CSRF-Token`` header, and a same-origin request (``Origin`` equal
  to the server's, or ``Sec-Fetch-Site: same-origin``). ``Origin: null`` is what a browser sends
  with a form POST from a page served with ``Referrer-Policy: no-referrer`` (the adjudication
  form), and also from sandboxed frames and ``data:`` pages: it proves nothing either way, so such
  a request is judged by ``Sec-Fetch-Site`` alone (``cross-site`` for those frames and pages).
* Every response carries a Content-Security-Policy allowing scripts from the server only (no inline
  script at all), no framing, and ``Referrer-Policy: no-referrer`` (links hold tokens).
* Files are served only from inside a served run folder (:func:`safe_file`).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path

ADMIN_SESSION_ENDED = (
    "Your session has ended (the server was restarted): open the link printed when it started again."
)
"""What a stale admin session is told (pages and APIs of the view and the labelling routes)."""

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'; connect-src 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
COOKIE = "arena_session"
MAX_SESSIONS = 10_000
#: what a stale session is told (page and API), see the module doc
SESSION_ENDED = (
    "Your session has ended: the server was restarted, or this browser's session does not belong "
    "to this campaign. Open the link you were given again (your saved labels are kept)."
)


#: the routes (by name) an annotator's session may reach: signing in, the pages' static files, their
#: campaign's instructions, their own queue, their items' images and their label writes (see the
#: module doc)
ANNOTATOR_ROUTES = frozenset(
    {
        "login",
        "report_css",
        "static",
        "instructions_page",
        "label_page",
        "item_image",
        "label_api",
        "undo_api",
    }
)
#: the routes of :data:`ANNOTATOR_ROUTES` that name no campaign (every other one must name the
#: session's own campaign in its ``cid`` path parameter)
ANNOTATOR_ANY_CAMPAIGN = frozenset({"login", "report_css", "static"})


def campaign_cookie(campaign: str) -> str:
    """The name of the annotator session cookie of campaign ``campaign`` (one per campaign)."""
    return f"{COOKIE}_c_{campaign}"


def campaign_cookie_path(campaign: str) -> str:
    """The path the annotator session cookie of ``campaign`` is sent to (that campaign's routes)."""
    return f"/c/{campaign}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class Session:
    """A browser session: the admin, or an annotator of one campaign."""

    kind: str  # "admin" or "annotator"
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    campaign: str | None = None
    annotator: str | None = None
    #: the version of the campaign's instructions this session was shown (annotators; see
    #: :func:`pptarena.view.labelling.label_page`)
    instructions_seen: int | None = None


class Access:
    """The server's tokens and sessions (see the module doc)."""

    def __init__(self, host: str, admin_token: str | None = None):
        self.loopback = is_loopback(host)
        self.admin_token = admin_token or (None if self.loopback else secrets.token_urlsafe(24))
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open_session(self, session: Session) -> str:
        """Store a session; returns its id (the cookie's value)."""
        sid = secrets.token_urlsafe(32)
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
            self._sessions[sid] = session
        return sid

    def session(self, sid: str | None) -> Session | None:
        """The session of a cookie value (None when unknown)."""
        if not sid:
            return None
        with self._lock:
            return self._sessions.get(sid)

    def campaign_session(self, cookies: dict[str, str], campaign: str) -> tuple[Session | None, bool]:
        """``(session, stale)`` of the annotator cookie of ``campaign``: the session when it is an
        annotator session of that very campaign; ``stale`` when a cookie was sent that gives none (an
        unknown id after a restart, or a session of another campaign or of the admin)."""
        sid = cookies.get(campaign_cookie(campaign))
        session = self.session(sid)
        if session is not None and session.kind == "annotator" and session.campaign == campaign:
            return session, False
        return None, bool(sid)

    def annotator_role(self, cookies: dict[str, str]) -> tuple[set[str], bool] | None:
        """None when the request is not an annotator's: it carries a valid admin session, or no
        annotator session and no campaign cookie at all. Else ``(campaigns, stale)``: the campaigns
        whose annotator sessions it carries (under any cookie name), and whether a campaign cookie
        named no session (the server restarted)."""
        admin = self.session(cookies.get(COOKIE))
        if admin is not None and admin.kind == "admin":
            return None
        campaigns: set[str] = set()
        stale = False
        if admin is not None and admin.kind == "annotator" and admin.campaign:
            campaigns.add(admin.campaign)  # an annotator's session id sent under the admin's name
        prefix = campaign_cookie("")
        for sid in (v for k, v in cookies.items() if k.startswith(prefix)):
            s = self.session(sid)
            if s is not None and s.kind == "annotator" and s.campaign:
                campaigns.add(s.campaign)
            else:
                stale = True
        return (campaigns, stale) if campaigns or stale else None

    def is_stale(self, sid: str | None) -> bool:
        """Whether a cookie value was sent that names no session (the server restarted)."""
        return bool(sid) and self.session(sid) is None

    def is_admin_token(self, token: str) -> bool:
        """Whether ``token`` is the admin token (compared in constant time)."""
        return self.admin_token is not None and hmac.compare_digest(token.encode(), self.admin_token.encode())

    def may_browse(self, session: Session | None) -> bool:
        """Whether run pages may be shown: on loopback, or to the admin."""
        return self.loopback or (session is not None and session.kind == "admin")


def same_origin(headers: dict[str, str], scheme: str, host: str) -> bool:
    """Whether a state-changing request comes from a page of this server (see the module doc)."""
    origin = headers.get("origin")
    if origin is not None and origin != "null":
        return origin == f"{scheme}://{host}"
    return headers.get("sec-fetch-site") == "same-origin"


def host_allowed(host_header: str, bound: str, port: int) -> bool:
    """Whether the ``Host`` header names this server (any host when bound to a non-loopback address,
    whose clients use whatever name reaches it; only loopback names on a loopback server)."""
    if not is_loopback(bound):
        return True
    name = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
    return is_loopback(name.strip("[]"))


def safe_file(root: Path, relative: str) -> Path | None:
    """``root/relative`` when it is a regular file inside ``root`` once every link is resolved; else None."""
    if not relative or "\x00" in relative:
        return None
    base = Path(root).resolve()
    try:
        path = (base / relative).resolve()
    except (OSError, RuntimeError):
        return None
    if not path.is_relative_to(base) or not path.is_file():
        return None
    return path
