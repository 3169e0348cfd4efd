"""Component options in a run config: readable validation errors, ``"<backend>/<model>"`` fields,
relative paths made absolute against the config's folder.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pptarena.models.messages import check_model_ref

_BRANCH_TAG = re.compile(
    r"[\[\](),]|^(str|int|float|bool|list|dict|tuple|set|none|bytes|union|nullable|default)$"
    r"|^(function-\w+|lax-or-strict|json-or-python|is-instance|tagged-union)"
)


def _readable_loc(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a config key path, without pydantic's union/validator branch tags.

    Union members and validator wrappers appear in ``loc`` as tags such as ``str`` or
    ``function-after[SecretStr(), str]``; a config key never looks like that.
    """
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            continue
        text = str(item)
        if _BRANCH_TAG.search(text):
            break
        parts.append(("." if parts else "") + text)
    return "".join(parts)


def _annotation_has_model_ref(annotation: Any) -> bool:
    for meta in getattr(annotation, "__metadata__", ()):
        if getattr(meta, "func", None) is check_model_ref:
            return True
    return any(_annotation_has_model_ref(a) for a in typing.get_args(annotation))


def _is_path_annotation(annotation: Any) -> bool:
    if annotation is Path:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(a is Path for a in typing.get_args(annotation))
    return False


def model_refs(options: BaseModel) -> dict[str, str]:
    """The ``"<backend>/<model>"`` values of an options object, by field name."""
    found: dict[str, str] = {}
    for name, info in type(options).model_fields.items():
        value = getattr(options, name)
        if value is None:
            continue
        if any(
            getattr(m, "func", None) is check_model_ref for m in info.metadata
        ) or _annotation_has_model_ref(info.annotation):
            if isinstance(value, str):
                found[name] = value
            elif isinstance(value, list | tuple):
                for i, v in enumerate(value):
                    found[f"{name}[{i}]"] = v
    return found


def absolutize_paths(options: BaseModel, base: Path) -> BaseModel:
    updates: dict[str, Any] = {}
    for name, info in type(options).model_fields.items():
        value = getattr(options, name)
        if isinstance(value, Path) and _is_path_annotation(info.annotation) and not value.is_absolute():
            updates[name] = (
                (base / value.expanduser()).resolve()
                if not str(value).startswith("~")
                else value.expanduser()
            )
        elif isinstance(value, Path) and str(value).startswith("~"):
            updates[name] = value.expanduser()
    return options.model_copy(update=updates) if updates else options


def format_validation(
    exc: ValidationError, prefix: str, options_model: type[BaseModel], raw: dict[str, Any]
) -> list[str]:
    """One line per problem of a validation error, each naming the config key path."""
    return format_errors(exc.errors(), prefix, list(options_model.model_fields))


def format_errors(errors: list[dict[str, Any]], prefix: str, known: list[str]) -> list[str]:
    """One line per problem of pydantic-style error dicts (``loc``, ``msg``, ``type``, ``input``): also
    for errors made in an agent's jail (:mod:`pptarena.run.jail.env_agents`); ``known`` lists the valid
    keys."""
    out = []
    seen: set[str] = set()
    for err in errors:
        loc = _readable_loc(tuple(err["loc"]))
        path = f"{prefix}.{loc}" if loc and not loc.startswith("[") else f"{prefix}{loc}"
        if path in seen:  # one line per problem: a union reports each member's failure
            continue
        seen.add(path)
        if err["type"] == "extra_forbidden":
            key = str(err["loc"][-1])
            hint = difflib.get_close_matches(key, known, n=1)
            msg = f"{path}: unknown option {key!r}"
            if hint:
                msg += f" (did you mean {hint[0]!r}?)"
            msg += f"; valid options: {', '.join(known) or '(none)'}"
        else:
            value = err.get("input")
            shown = "" if isinstance(value, dict) else f" (got {value!r})"
            if isinstance(err.get("input_repr"), str):  # made in a jail: the value's repr, cut short
                shown = f" (got {err['input_repr']})"
            msg = f"{path}: {err['msg']}{shown}"
        out.append(msg)
    return out
