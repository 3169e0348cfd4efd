"""One redactor for every text that leaves a run: files of the run folder, logs, reports, model prompts.

It knows every secret *value* in play: the values of environment variables named like secrets
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``...), passwords inside URLs of the environment
(``scheme://user:password@host``) and every ``{ env = "VAR" }`` value the run config resolved
(:func:`add_secret`, called by the config loader). :func:`redact_text` replaces each occurrence by
``***``; :func:`redact_obj` does it inside JSON-like data, :func:`redact_file` rewrites a file in
place (never through a link: :mod:`pptarena.trust.safeio`) and :func:`redact_tree` every text file of a
pair's folder. (Chat messages are cleaned before they are sent to a model by
:func:`pptarena.models.messages.redact_messages`, which uses :func:`redact_text`: this module
imports nothing of the model layer.)

:func:`literal_secret_problems` finds secrets written literally in a config (under a secret-named
key, in a URL's user-info, or shaped like a provider key) so the loader can refuse them.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

MASK = "***"
MIN_SECRET_CHARS = 8  # shorter values are too common to replace safely
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)
URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@", re.IGNORECASE)
KEY_SHAPE = re.compile(
    r"^(sk-|sk_|sk-ant-|ghp_|gho_|github_pat_|xox[abpr]-|AKIA|AIza|hf_|glpat-|r8_)[A-Za-z0-9_\-]{8,}"
)
PLACEHOLDERS = frozenset(
    {"empty", "none", "local", "dummy", "ollama", "lm-studio", "sk-no-key-required", "not-needed"}
)
MAX_FILE_BYTES = 64 * 1024 * 1024

_lock = threading.Lock()
_added: set[str] = set()


def add_secret(value: str | None) -> None:
    """Remember ``value`` as a secret (e.g. a resolved ``{ env = ... }`` config value)."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _added.add(value)


def env_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """Secret values of an environment: secret-named variables and passwords inside URLs."""
    out: set[str] = set()
    for name, value in (os.environ if environ is None else environ).items():
        if not value:
            continue
        if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_CHARS:
            out.add(value)
        for match in URL_PASSWORD.finditer(value):
            if len(match.group(1)) >= 4:
                out.add(match.group(1))
    return out


@functools.lru_cache(maxsize=256)
def encoded_forms(value: str) -> frozenset[str]:
    """``value`` as code that copies it out usually writes it: base64 (standard and URL-safe, at
    each of the three offsets it can have inside a longer encoded text), hex, percent-encoding (upper-
    and lower-case escapes) and JSON escaping; none for values shorter than ``MIN_SECRET_CHARS``.
    Only characters that depend on ``value`` alone are kept, so the form is found whatever surrounds
    the secret. (A secret transformed any other way is not recognised.)
    """
    if len(value) < MIN_SECRET_CHARS:  # e.g. a short URL password: its hex would be a plain number
        return frozenset()
    raw = value.encode("utf-8")
    percent = quote(value, safe="")
    lower_escapes = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), percent)
    forms = {raw.hex(), raw.hex().upper(), percent, lower_escapes, json.dumps(value)[1:-1]}
    for offset in range(3):  # the secret starts at byte offset 0, 1 or 2 of a base64 group
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        part = encoded[-(-8 * offset // 6) : 8 * (offset + len(raw)) // 6]
        forms |= {part, part.replace("+", "-").replace("/", "_")}
    forms.discard(value)
    return frozenset(f for f in forms if len(f) >= MIN_SECRET_CHARS)


def secrets() -> list[str]:
    """Every secret known now with its :func:`encoded_forms`, longest first (so a secret containing
    another is masked whole)."""
    with _lock:
        known = set(_added)
    known |= env_secrets()
    for value in list(known):
        known |= encoded_forms(value)
    return sorted(known, key=len, reverse=True)


def redact_text(text: str, known: Iterable[str | None] | None = None, *, fragments: bool = False) -> str:
    """``text`` with every known secret replaced by ``***``.

    :param known: the secrets to mask (default: :func:`secrets`); empty values are ignored.
    :param fragments: also mask the 8-character head and tail of secrets of 16+ characters, for
        texts from model providers, which echo keys masked as ``sk-abc...wxyz``.
    """
    for value in secrets() if known is None else known:
        if not value:
            continue
        if value in text:
            text = text.replace(value, MASK)
        if fragments and len(value) >= 16:
            text = text.replace(value[:8], MASK).replace(value[-8:], MASK)
    return text


def redact_obj(data: Any, known: list[str] | None = None) -> Any:
    """JSON-like ``data`` (dicts, lists, strings) with secrets masked in every string, keys included."""
    known = secrets() if known is None else known
    if not known:
        return data
    if isinstance(data, str):
        return redact_text(data, known)
    if isinstance(data, Mapping):
        return {
            redact_obj(k, known) if isinstance(k, str) else k: redact_obj(v, known) for k, v in data.items()
        }
    if isinstance(data, list | tuple):
        return [redact_obj(v, known) for v in data]
    return data


def mask_bytes(data: bytes, known: Iterable[str | None]) -> bytes:
    """``data`` with every secret of ``known`` (as UTF-8) replaced by ``***``."""
    for value in known:
        if value:
            data = data.replace(value.encode("utf-8"), MASK.encode())
    return data


def redact_file(path: Path, known: list[str] | None = None, *, root: Path | None = None) -> bool:
    """Mask secrets in a text file the agent side may have written; True when it was rewritten.

    Through :mod:`pptarena.trust.safeio`: the file is read only when it is a regular file (a link, FIFO or
    device is left alone, never opened), and a changed file is replaced by a new one (``O_EXCL``
    temporary file + rename in the same folder), never written through a link or into a file
    hard-linked elsewhere. With ``root`` (a folder the harness made), no folder between ``root``
    and the file is followed either. ``known``: the secrets (default: :func:`secrets`).
    """
    from .safeio import UnsafeFileError, rewrite_regular

    known = secrets() if known is None else known
    if not known:
        return False
    try:
        return rewrite_regular(path, lambda data: mask_bytes(data, known), MAX_FILE_BYTES, root=root)
    except (OSError, UnsafeFileError):
        return False


def literal_secret_problems(raw: Any, path: str = "") -> list[str]:
    """Where a config holds a secret literally (each a message naming the key path and the fix)."""
    problems: list[str] = []
    hint = 'write it as { env = "VAR_NAME" } and export VAR_NAME'
    if isinstance(raw, Mapping):
        if set(raw) == {"env"}:
            return []
        for key, value in raw.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(value, str) and _secret_literal(str(key), value):
                problems.append(f"{sub}: a secret is written literally in the config; {hint}")
            else:
                problems += literal_secret_problems(value, sub)
    elif isinstance(raw, list):
        for i, value in enumerate(raw):
            problems += literal_secret_problems(value, f"{path}[{i}]")
    elif isinstance(raw, str):
        if URL_PASSWORD.search(raw) or KEY_SHAPE.match(raw):
            problems.append(f"{path}: a secret is written literally in the config; {hint}")
    return problems


#: Words of a config key that name a secret (``api_key``, ``SESSION_TOKEN``, ``privateKey``).
SECRET_WORDS = frozenset(
    {
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "authorization",
        "auth",
        "cookie",
        "credential",
        "credentials",
        "session",
        "private",
        "bearer",
    }
)
#: Endings of one-word secret names (``apikey``, ``accesstoken``, ``clientsecret``).
SECRET_WORD_ENDINGS = ("apikey", "token", "secret", "password", "passwd", "credential", "credentials")
#: Last words of a config key that say the value is about a secret, not the secret itself
#: (``session_check``, ``key_file``, ``token_env``).
NOT_SECRET_TAILS = frozenset(
    {
        "check",
        "path",
        "file",
        "dir",
        "mode",
        "name",
        "type",
        "env",
        "var",
        "limit",
        "count",
        "size",
        "layout",
        "format",
        "kind",
        "url",
        "header",
        "headers",
        "field",
        "policy",
        "id",
    }
)


def key_words(key: str) -> list[str]:
    """The words of a config key: ``apiKey`` and ``api_key`` and ``API-KEY`` all give ``[api, key]``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def secret_named(key: str) -> bool:
    """True when a config key names a secret: one of its words is a secret word (``api_key``,
    ``SESSION_TOKEN``, ``password``, ``apikey``) and its last word is not a qualifier such as
    ``check`` or ``path`` (``session_check``, ``keys_path`` and ``max_tokens`` are not secrets)."""
    words = key_words(key)
    if not words or words[-1] in NOT_SECRET_TAILS:
        return False
    return words[-1] not in {"tokens", "keys"} and any(
        w in SECRET_WORDS or w.endswith(SECRET_WORD_ENDINGS) for w in words
    )


def _secret_literal(key: str, value: str) -> bool:
    if URL_PASSWORD.search(value) or KEY_SHAPE.match(value):
        return True
    return secret_named(key) and len(value) >= MIN_SECRET_CHARS and value.lower() not in PLACEHOLDERS


TEXT_SUFFIXES = (
    ".txt",
    ".json",
    ".jsonl",
    ".log",
    ".py",
    ".md",
    ".xml",
    ".html",
    ".csv",
    ".yaml",
    ".toml",
    "",
)


def redact_tree(root: Path) -> list[str]:
    """Mask secrets in every text file under ``root`` (a pair's folder, after its agent ran).

    Files a plugin wrote directly (programs, patches, CLI transcripts) get the same treatment as
    the harness's own writes. Binary files (decks, images) are not rewritten. The folder is walked
    with :func:`pptarena.trust.safeio.walk_tree` (no link is followed, not even one planted in place of a
    folder) and each file rewritten with :func:`pptarena.trust.safeio.rewrite_at` (regular files only,
    replaced by a new file: a link, FIFO or hard link the agent left is never written through).
    Returns the names (relative to ``root``) it could not check: links, special files, folders it
    did not enter, files too large or unreadable.
    """
    from .safeio import UnsafeFileError, rewrite_at, walk_tree

    known = secrets()
    if not known:
        return []
    left: list[str] = []
    try:
        for entry in walk_tree(root):
            if entry.kind == "skipped":
                left.append(f"{entry.rel}: {entry.problem}")
                continue
            if entry.kind == "dir" or Path(entry.name).suffix.lower() not in TEXT_SUFFIXES:
                continue
            if entry.kind != "file":
                left.append(f"{entry.rel}: {entry.problem or entry.kind}")
                continue
            try:
                rewrite_at(entry.dir_fd, entry.name, lambda data: mask_bytes(data, known), MAX_FILE_BYTES)
            except (OSError, UnsafeFileError) as exc:
                left.append(f"{entry.rel}: {exc}")
    except (OSError, UnsafeFileError) as exc:  # the folder is gone, or holds too many names
        left.append(f"{root}: {exc}")
    return left
