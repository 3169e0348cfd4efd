"""Agent distributions for the agent-environment tests: a wheel written file by file (so it can hold
what a hostile distribution ships, a ``.pth`` file among them) and a run config that names it."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    files: dict[str, str],
    entry_points: dict[str, str],
    requires: tuple[str, ...] = (),
) -> Path:
    """A pure-Python wheel of distribution ``name`` holding ``files`` (path in site-packages → text) and
    declaring ``entry_points`` in the ``pptarena`` group (entry-point name → module)."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    meta = "".join(f"Requires-Dist: {r}\n" for r in requires)
    contents = {
        **{path: text.encode() for path, text in files.items()},
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{meta}".encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: pptarena-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{info}/entry_points.txt": (
            "[pptarena]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items())
        ).encode(),
    }
    record = [_record_line(path, data) for path, data in contents.items()] + [f"{info}/RECORD,,"]
    wheel = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in contents.items():
            zf.writestr(path, data)
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def env_agent_config(
    folder: Path, package: str, use: str, cache: Path, extra: str = "", judges: str = "structural"
) -> Path:
    """A run config over the demo set with one agent from its own environment (``package``)."""
    lines = [
        "[run]",
        "jobs = 1",
        f'cache_dir = "{cache}"',
        "",
        "[dataset]",
        'use = "demo"',
        "",
        "[[agents]]",
        f'use = "{use}"',
        f'package = "{package}"',
        extra,
        "",
        "[[judges]]",
        f'use = "{judges}"',
        "",
    ]
    path = folder / "run.toml"
    path.write_text("\n".join(lines))
    return path
