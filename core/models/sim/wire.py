"""What every provider's wire module provides: routes, error forms, rate-limit answers, rendering.

A route is ``(method, template, handler)``; ``{name}`` in a template matches one path segment
(up to ``/`` or ``:``) and is passed to the handler as a keyword, ``{version}`` matches
``v1``, ``v1beta`` or ``v1alpha``. The template is also the key of ``stats()["by_path"]``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pptarena.models.sim.httpio import Incoming, Outgoing

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.completion import Completion
    from pptarena.models.sim.engine import Engine
    from pptarena.models.sim.limits import LimitDecision
    from pptarena.models.sim.prompt import Prompt, WireError

Handler = Callable[..., Outgoing]


def compile_template(template: str) -> re.Pattern[str]:
    """The regex of a route template (see the module docstring)."""
    out = ""
    for piece in re.split(r"(\{[a-z_]+\})", template):
        if piece == "{version}":
            out += r"(?P<version>v1(?:alpha|beta)?)"
        elif piece.startswith("{"):
            out += f"(?P<{piece[1:-1]}>[^/:]+)"
        else:
            out += re.escape(piece)
    return re.compile(out + r"\Z")


def new_id(prefix: str, length: int = 24) -> str:
    """A random id with ``prefix`` (``chatcmpl-``, ``msg_``, ...)."""
    return prefix + uuid.uuid4().hex[:length]


class Wire:
    """Base class of the OpenAI, Anthropic and Gemini wire modules."""

    name = "wire"
    routes: list[tuple[str, str, str]] = []

    def __init__(self, engine: Engine):
        self.engine = engine
        self._compiled = [(m, compile_template(t), t, h) for m, t, h in self.routes]

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str], str] | None:
        """The handler, path parameters and template of a request, or None."""
        for m, regex, template, handler in self._compiled:
            found = regex.match(path)
            if found and m == method:
                params = {k: v for k, v in found.groupdict().items() if k != "version"}
                return getattr(self, handler), params, template
        return None

    def path_known(self, path: str) -> bool:
        """True when some route has this path (for 405 versus 404)."""
        return any(regex.match(path) for _, regex, _, _ in self._compiled)

    # -- error forms ---------------------------------------------------------------

    def error(self, status: int, message: str, kind: str | None = None) -> Outgoing:
        """An error answer in the provider's form."""
        raise NotImplementedError

    def refused(self, exc: WireError) -> Outgoing:
        """The answer to a request the provider refuses (``exc`` says why, with which status)."""
        return self.error(exc.status, exc.message)

    def unauthorized(self, api_key: str | None) -> Outgoing:
        """401 for a missing or refused key."""
        raise NotImplementedError

    def model_not_found(self, model: str) -> Outgoing:
        """404 for a model the simulator was told does not exist."""
        raise NotImplementedError

    def rate_limited(self, decision: LimitDecision, model: str) -> Outgoing:
        """429 for a request over a limit (headers included)."""
        raise NotImplementedError

    def fault_error(self, kind: str) -> Outgoing:
        """The answer of a status fault (``500``, ``502``, ``503``, ``529``)."""
        raise NotImplementedError

    def limit_headers(self, decision: LimitDecision) -> dict[str, str]:
        """The rate-limit headers sent with every generation answer."""
        return {}

    def request_headers(self) -> dict[str, str]:
        """Headers every answer carries (a request id)."""
        return {"x-request-id": new_id("req_")}

    # -- generation ----------------------------------------------------------------

    def render(self, prompt: Prompt, completion: Completion) -> dict[str, Any]:
        """The 200 body of a completion."""
        raise NotImplementedError

    def generate(self, inc: Incoming, prompt: Prompt) -> Outgoing:
        """Run ``prompt`` through the engine's pipeline (limits, faults, latency, reply)."""
        return self.engine.generate(inc, self, prompt)


def html_502() -> Outgoing:
    """A gateway's 502 page (HTML, as a proxy in front of any provider sends it)."""
    body = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
    return Outgoing(502, body, content_type="text/html")


__all__ = ["Wire", "compile_template", "html_502", "new_id"]
