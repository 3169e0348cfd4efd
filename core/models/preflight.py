"""Preflight: check every model backend a run uses once, before its first pair.

A run that would fail at its first model call (no SDK, no key, a server that is down, a misspelt
model) fails here instead, in seconds and with one line per problem, before any agent starts.

Which models a run uses (:func:`models_in_use`): the ``"<backend>/<model>"`` values of its agents'
and judges' options: fields typed :data:`~pptarena.models.ModelRef` (what the config check and
the judge fingerprints read, :func:`pptarena.run.configuration.config_options.model_refs`), and plain string
options (an agent from its own environment has no typed fields) whose value looks like
``<backend>/<model>`` with ``backend`` a ``[backends.NAME]`` table of the config.

For each backend in use (:func:`check_backends`): it is built as the run builds it (the SDK is
installed, the key is present: the backend's own :class:`~pptarena.types.ComponentUnavailable`
message, e.g. ``pip install 'pptarena[openai]'``), then, for each of its models, its
``check(model)`` method is called when it has one (built-in ``openai`` and ``anthropic``: the
server is reachable, the key accepted, the model known; see their ``check``). A backend without
``check`` (``scripted``, most third-party ones) is checked by being built. ``check`` raises for a
failure and may return a note (a string: the model could not be checked, the run may start).

Backends are built, then checked, concurrently; each step waits at most ``timeout`` seconds
(default :data:`DEFAULT_TIMEOUT`) and nothing is retried. Every line names the backend, the model
and the server (``base_url``; "default" for the provider's own), never a key: messages pass
through :func:`~pptarena.models.messages.redact_secrets` with the backend's secrets.
"""

from __future__ import annotations

import inspect
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, SecretStr

from pptarena.models.messages import redact_secrets, split_model_ref
from pptarena.models.pricing import backend_url
from pptarena.types import PptArenaError

log = logging.getLogger("pptarena.preflight")

DEFAULT_TIMEOUT = 15.0
"""Seconds each preflight step (building the backends, checking the models) may take."""

_REF = re.compile(r"^(?P<backend>[A-Za-z0-9_.-]+)/(?P<model>\S+)$")


class PreflightError(PptArenaError):
    """A model backend the run uses failed its preflight; the message is the report's lines."""

    def __init__(self, report: PreflightReport):
        super().__init__("\n".join(report.lines()))
        self.report = report

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its report (it may cross a process boundary)."""
        return (type(self), (self.report,))


@dataclass(frozen=True)
class PreflightCheck:
    """The outcome for one backend and model: ``ok``, and ``message`` (why it failed; for a check
    that passed, a note or "")."""

    backend: str
    model: str
    base_url: str
    ok: bool
    message: str = ""

    def line(self) -> str:
        """One line: ``openai/gpt-4o (base_url https://...): message``."""
        head = f"{self.backend}/{self.model} (base_url {self.base_url})"
        if self.ok:
            return f"{head}: note: {self.message}" if self.message else f"{head}: ok"
        return f"{head}: {self.message}"


@dataclass
class PreflightReport:
    """Every check of a preflight, in (backend, model) order."""

    checks: list[PreflightCheck] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[PreflightCheck]:
        """The checks that failed."""
        return [c for c in self.checks if not c.ok]

    @property
    def notes(self) -> list[PreflightCheck]:
        """The checks that passed with a note (the model could not be checked)."""
        return [c for c in self.checks if c.ok and c.message]

    @property
    def ok(self) -> bool:
        """True when nothing failed (also when nothing was checked)."""
        return not self.failures

    def lines(self) -> list[str]:
        """One line per failure, then one per note; with no failure and no note, none."""
        failed = [f"preflight failed: {c.line()}" for c in self.failures]
        return failed + [f"preflight: {c.line()}" for c in self.notes]


# --------------------------------------------------------------------------- which models a run uses


def _string_refs(options: BaseModel, configured: Iterable[str]) -> set[str]:
    """Plain string option values (also extra fields and lists of strings) that look like
    ``<backend>/<model>`` with ``backend`` among ``configured``."""
    names = set(configured)
    values: list[Any] = [getattr(options, f) for f in type(options).model_fields]
    values += list((getattr(options, "model_extra", None) or {}).values())
    found = set()
    for value in values:
        for item in value if isinstance(value, list | tuple) else [value]:
            match = _REF.match(item) if isinstance(item, str) else None
            if match and match["backend"] in names:
                found.add(item)
    return found


def models_in_use(config: Any, kinds: Iterable[str] = ("agents", "judges")) -> dict[str, list[str]]:
    """``{backend: [models]}`` the config's components of ``kinds`` (``agents``, ``judges``) name in
    their options (see the module docstring), sorted."""
    from pptarena.run.configuration.config_options import model_refs

    comps = [c for kind in kinds for c in getattr(config, kind, None) or []]
    configured = list(getattr(config, "backends", None) or {})
    refs: set[str] = set()
    for comp in comps:
        refs.update(v for v in model_refs(comp.options).values() if isinstance(v, str))
        refs.update(_string_refs(comp.options, configured))
    out: dict[str, set[str]] = {}
    for ref in refs:
        try:
            backend, model = split_model_ref(ref)
        except ValueError:
            continue
        out.setdefault(backend, set()).add(model)
    return {b: sorted(m) for b, m in sorted(out.items())}


# --------------------------------------------------------------------------- the checks


def _in_threads(jobs: Mapping[Any, Callable[[], Any]], seconds: float) -> dict[Any, tuple[str, Any]]:
    """Run every job on a daemon thread of its own; wait for all of them, ``seconds`` at most.

    Returns ``{key: ("ok", value) | ("error", exception) | ("timeout", None)}``. A job still running
    at the deadline is left to finish by itself (its own timeout ends it).
    """
    results: dict[Any, tuple[str, Any]] = {}
    lock = threading.Lock()

    def run(key: Any, job: Callable[[], Any]) -> None:
        try:
            outcome: tuple[str, Any] = ("ok", job())
        except BaseException as exc:  # noqa: BLE001 - reported as this job's failure
            outcome = ("error", exc)
        with lock:
            results[key] = outcome

    threads = [
        threading.Thread(target=run, args=(k, j), name="pptarena-preflight", daemon=True)
        for k, j in jobs.items()
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return {k: results.get(k, ("timeout", None)) for k in jobs}


def _secrets_of(backend: Any, options: Any) -> list[str]:
    """What a failure message must not show: the backend's own secrets and its options' SecretStr
    values (keys, secret headers)."""
    from pptarena.trust.redact import secrets

    found = [str(s) for s in getattr(backend, "_secrets", None) or [] if s]

    def walk(value: Any, depth: int = 0) -> None:
        if depth > 4:
            return
        if isinstance(value, SecretStr):
            found.append(value.get_secret_value())
        elif isinstance(value, BaseModel):
            for name in type(value).model_fields:
                walk(getattr(value, name, None), depth + 1)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v, depth + 1)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v, depth + 1)
        elif isinstance(value, SimpleNamespace):
            walk(vars(value), depth + 1)

    walk(options)
    return [*secrets(), *found]


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())  # one line


def display_url(url: str) -> str:
    """``url`` without what may hold a secret: user and password, query and fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "(unreadable url)"
    if not parts.scheme or not host:
        return url.split("?")[0].split("#")[0].rpartition("@")[2]
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _server(backend: Any, options: Any) -> str:
    """The server of a backend for the report (:func:`display_url`): its
    ``cache_identity()["base_url"]``, else its options' ``base_url`` / ``azure_endpoint`` /
    ``endpoint``, else "default"."""
    identity = getattr(backend, "cache_identity", None)
    if callable(identity):
        try:
            url = identity().get("base_url")
            if isinstance(url, str) and url:
                return display_url(url)
        except Exception:  # noqa: BLE001 - a report detail, never a reason to fail
            pass
    url = backend_url(backend) or backend_url(SimpleNamespace(options=options))
    return display_url(url) if url else "default"


def check_backends(
    uses: Mapping[str, Iterable[str]],
    build: Callable[[str], Any],
    *,
    options_of: Callable[[str], Any] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> PreflightReport:
    """Check ``uses`` (``{backend name: models}``): build each backend with ``build(name)``, then
    call its ``check(model)`` for each model (``timeout=`` too when its signature takes it); both
    steps concurrently, ``timeout`` seconds each, no retries. ``options_of(name)`` gives a
    backend's configured options for the report when it could not be built (its server, its
    secrets to redact)."""
    started = time.monotonic()
    uses = {name: sorted(set(models)) for name, models in uses.items()}
    built = _in_threads({name: (lambda n=name: build(n)) for name in uses}, timeout)
    checks: list[PreflightCheck] = []
    backends: dict[str, Any] = {}
    for name, models in uses.items():
        options = options_of(name) if options_of is not None else None
        state, value = built[name]
        if state == "ok":
            backends[name] = value
            continue
        server = _server(None, options)
        why = (
            f"the backend was not built within {timeout:g} s"
            if state == "timeout"
            else redact_secrets(_reason(value), _secrets_of(None, options))
        )
        checks.append(PreflightCheck(name, ", ".join(models) or "?", server, False, why))

    def job(backend: Any, model: str) -> Callable[[], Any]:
        check = getattr(backend, "check", None)
        if not callable(check):
            return lambda: None
        try:
            takes_timeout = "timeout" in inspect.signature(check).parameters
        except (TypeError, ValueError):
            takes_timeout = False
        return (lambda: check(model, timeout=timeout)) if takes_timeout else (lambda: check(model))

    jobs = {(name, model): job(backends[name], model) for name in backends for model in uses[name]}
    answers = _in_threads(jobs, timeout + 1.0)
    for (name, model), (state, value) in answers.items():
        backend = backends[name]
        options = getattr(backend, "options", None) or (options_of(name) if options_of else None)
        server = _server(backend, options)
        hide = _secrets_of(backend, options)
        if state == "ok":
            note = redact_secrets(" ".join(value.split()), hide) if isinstance(value, str) else ""
            checks.append(PreflightCheck(name, model, server, True, note))
        elif state == "timeout":
            checks.append(PreflightCheck(name, model, server, False, f"no answer within {timeout:g} s"))
        else:
            checks.append(PreflightCheck(name, model, server, False, redact_secrets(_reason(value), hide)))
    checks.sort(key=lambda c: (c.backend, c.model))
    return PreflightReport(checks, round(time.monotonic() - started, 3))


def preflight(
    config: Any,
    registry: Any,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    kinds: Iterable[str] = ("agents", "judges"),
) -> PreflightReport:
    """Check every model backend the run ``config`` uses (its ``kinds`` of components; see
    :func:`models_in_use`) as the run would build it. Nothing is built, and no request made, when
    no component names a model: the report is then empty (and ``ok``)."""
    uses = models_in_use(config, kinds)
    if not uses:
        return PreflightReport()
    from pptarena.run.configuration.components import Components

    made: list[Any] = []

    def build(name: str) -> Any:
        # one Components per backend: each builds under its own lock, so a slow one delays no other
        components = Components(config, registry)
        made.append(components)
        return components.backend(name)

    def options_of(name: str) -> Any:
        comp = (getattr(config, "backends", None) or {}).get(name)
        return comp.options if comp is not None else None

    try:
        return check_backends(uses, build, options_of=options_of, timeout=timeout)
    finally:
        for components in made:
            components.close()


def preflight_run(
    config: Any,
    registry: Any,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    kinds: Iterable[str] = ("agents", "judges"),
) -> PreflightReport | None:
    """What a run (``arena run``, :class:`~pptarena.run.runner.Runner`) and ``arena rescore`` call
    before their first pair: nothing when ``config.run.preflight`` is off (None), else
    :func:`preflight`; notes are logged as warnings, failures raise :class:`PreflightError`."""
    run = getattr(config, "run", None)
    if run is not None and not getattr(run, "preflight", True):
        return None
    report = preflight(config, registry, timeout=timeout, kinds=kinds)
    if not report.ok:
        raise PreflightError(report)
    for line in report.lines():
        log.warning("%s", line)
    return report


__all__ = [
    "DEFAULT_TIMEOUT",
    "PreflightCheck",
    "PreflightError",
    "PreflightReport",
    "check_backends",
    "models_in_use",
    "preflight",
    "preflight_run",
]
