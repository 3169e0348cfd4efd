"""The guard on part names a client sends: zip member names only, never a path.

A part is named as it is in the deck's zip (``ppt/slides/slide1.xml``): no leading slash, no
backslash, no ``.`` or ``..`` segment, no empty segment, no control character, and it must be a
member of the deck. Parts are read from the zip, never from the file system, so a name can only
ever reach a member of the working copy; the guard makes a path-like name fail with a clear
message instead of a puzzling "no such part".
"""

from __future__ import annotations

import re

from pptarena.mcp.session import ToolFailure

MAX_NAME_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_part_name(name: object, members: set[str] | list[str]) -> str:
    """``name`` when it is a member name of the deck; else :class:`ToolFailure` saying why."""
    if not isinstance(name, str) or not name:
        raise ToolFailure("a part name is a non-empty string such as 'ppt/slides/slide1.xml'")
    shown = name[:MAX_NAME_CHARS] + ("…" if len(name) > MAX_NAME_CHARS else "")
    if len(name) > MAX_NAME_CHARS:
        raise ToolFailure(f"part name {shown!r} is over {MAX_NAME_CHARS} characters")
    if _CONTROL.search(name) or "\\" in name:
        raise ToolFailure(f"part name {shown!r} holds a control character or a backslash")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise ToolFailure(
            f"part name {shown!r} is absolute: name parts as the deck's zip does, "
            "e.g. 'ppt/slides/slide1.xml'"
        )
    segments = name.split("/")
    if any(s in ("", ".", "..") for s in segments):
        raise ToolFailure(f"part name {shown!r} has an empty, '.' or '..' segment: parts are not paths")
    if name not in members:
        raise ToolFailure(f"the deck has no part {shown!r} (list_parts names them)")
    return name
