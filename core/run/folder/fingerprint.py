"""Judge fingerprints: what makes two verdicts come from "the same judge".

A fingerprint records the judge component (plugin, name, distribution version), the models it
calls, its options (sampling parameters included; secrets never), the sampling defaults of the
backends it uses, and a hash of its prompts: the judge's ``fingerprint_texts()`` when it defines
one, else the source of the judge's module and of every module in its ``fingerprint_modules``.
Its ``id`` is a hash of all of that except the label.

Every verdict records its judge's ``id`` (and, for a task with a rubric, the rubric's hash); the
run manifest keeps the full fingerprints. :func:`check_fingerprints` refuses to add verdicts of a
judge whose fingerprint differs from the one already recorded under the same label.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Iterable
from typing import Any

from pptarena.run.configuration.config_options import model_refs
from pptarena.run.configuration.config_secrets import redact
from pptarena.run.folder.manifest_record import Manifest
from pptarena.run.folder.records import ResultRow
from pptarena.types import PptArenaError

SAMPLING_KEYS = ("temperature", "max_tokens", "top_p", "seed", "reasoning_effort")


class JudgeChangedError(PptArenaError):
    """A judge label already holds verdicts of a judge with another fingerprint."""


def sha_of(data: Any) -> str:
    """A short (16 hex digits) SHA-256 of JSON-ready data, keys sorted: the fingerprints' ids."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def module_source(module: Any) -> str:
    """A module's source text (its ``repr`` when the source cannot be read)."""
    try:
        return inspect.getsource(module)
    except (OSError, TypeError):
        return repr(module)


def prompts_hash(judge: Any) -> str:
    """Hash of the judge's prompts: ``fingerprint_texts()``, else its module sources."""
    texts = getattr(judge, "fingerprint_texts", None)
    if callable(texts):
        return sha_of(list(texts()))
    modules = [sys.modules.get(type(judge).__module__), *getattr(judge, "fingerprint_modules", ())]
    return sha_of([module_source(m) for m in modules if m is not None])


def rubric_hash(rubric: Any) -> str | None:
    """Hash of a task's rubric tree (None without a rubric)."""
    return None if rubric is None else sha_of(rubric)


def backend_sampling(models: Iterable[str], backends: dict[str, Any] | None) -> dict[str, Any]:
    """The sampling defaults (:data:`SAMPLING_KEYS`) of the backends some model refs name."""
    sampling: dict[str, Any] = {}
    for ref in models:
        backend = ref.partition("/")[0]
        bcomp = (backends or {}).get(backend)
        opts = bcomp.options.model_dump(mode="json") if bcomp is not None else {}
        sampling[backend] = {k: opts[k] for k in SAMPLING_KEYS if opts.get(k) is not None}
    return sampling


def judge_fingerprint(comp: Any, judge: Any, backends: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fingerprint of one configured judge (``comp``: its ComponentConfig; ``judge``: the instance)."""
    spec = comp.spec
    options = redact(comp.options.model_dump(mode="json"))
    models = sorted(set(model_refs(comp.options).values()))
    body = {
        "component": f"{getattr(spec, 'plugin', '?')}:{getattr(spec, 'name', comp.use)}",
        "version": getattr(spec, "version", None),
        "models": models,
        "options": options,
        "backend_sampling": backend_sampling(models, backends),
        "prompts_sha": prompts_hash(judge),
    }
    return {"label": comp.label, **body, "id": sha_of(body)}


def cached_fingerprint(comp: Any, judge: Any, backends: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`judge_fingerprint`, computed once per judge instance (kept on the instance when possible)."""
    fp = getattr(judge, "_pptarena_fingerprint", None)
    if isinstance(fp, dict) and fp.get("label") == comp.label:
        return fp
    fp = judge_fingerprint(comp, judge, backends)
    try:
        judge._pptarena_fingerprint = fp
    except (AttributeError, TypeError):
        pass
    return fp


def recorded_ids(manifest: Manifest, rows: Iterable[ResultRow]) -> dict[str, set[str]]:
    """Fingerprint ids already recorded per judge label (manifest and result lines)."""
    out: dict[str, set[str]] = {}
    for label, fp in manifest.judge_fingerprints.items():
        if isinstance(fp, dict) and fp.get("id"):
            out.setdefault(label, set()).add(str(fp["id"]))
    for r in rows:
        for label, block in r.scores.items():
            fid = block.fingerprint
            if fid:
                out.setdefault(label, set()).add(str(fid))
    return out


def _what_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    if not old:
        return "recorded verdicts carry another fingerprint"
    keys = [
        k
        for k in ("component", "version", "models", "options", "backend_sampling", "prompts_sha")
        if old.get(k) != new.get(k)
    ]
    return "differs in " + (", ".join(keys) or "id")


def check_fingerprints(
    current: dict[str, dict[str, Any]],
    manifest: Manifest,
    rows: Iterable[ResultRow],
    where: str,
    remedy: str,
) -> None:
    """Raise :class:`JudgeChangedError` when a label's recorded fingerprint differs from ``current``."""
    recorded = recorded_ids(manifest, rows)
    problems = []
    for label, fp in current.items():
        ids = recorded.get(label, set()) - {fp["id"]}
        if ids:
            old = manifest.judge_fingerprints.get(label)
            problems.append(
                f"judge {label!r} ({_what_changed(old, fp)}: {', '.join(sorted(ids))} -> {fp['id']})"
            )
    if problems:
        raise JudgeChangedError(
            f"{where} holds verdicts of another version of "
            + "; ".join(problems)
            + ". Mixing them would compare two different judges. "
            + remedy
        )
