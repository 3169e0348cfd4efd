"""What each deck tool does, without the MCP SDK: functions of a session returning a :class:`Reply`.

:mod:`pptarena.mcp.server` turns them into MCP tools (names, schemas, descriptions). Every function
here runs inside :meth:`DeckSession.call` (one call at a time, counted, logged) and reads the
working copy through a private snapshot (:meth:`DeckSession.snapshot`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pptarena.mcp.bounded import bounded_list_json
from pptarena.mcp.session import DeckSession, Reply, ToolFailure

TEXT_SUFFIXES = (".xml", ".rels", ".vml", ".txt")

# The sandboxed program: DECK_PATH is a writable copy of the working copy; when the program
# changed it, the harness takes it back on a pipe (see pptarena.trust.sandbox.run_python).
RUNNER = """
import hashlib, os, runpy, shutil
_deck = os.path.abspath("deck.pptx")
shutil.copyfile("input.pptx", _deck)
os.chmod(_deck, 0o644)

def _digest():
    try:
        with open(_deck, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None

_before = _digest()
try:
    runpy.run_path("program.py", init_globals={"DECK_PATH": _deck}, run_name="__main__")
finally:
    if os.path.isfile(_deck) and not os.path.islink(_deck) and _digest() != _before:
        sandbox_export(_deck)
"""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _slide_numbers(slides: list[int] | None, count: int, what: str) -> list[int]:
    """The 1-based slide numbers asked for (all when None), checked against the deck."""
    if slides is None:
        return list(range(1, count + 1))
    bad = [n for n in slides if not isinstance(n, int) or n < 1 or n > count]
    if bad:
        raise ToolFailure(f"{what}: no slide {bad[0]} (the deck has {count} slides, numbered from 1)")
    return list(dict.fromkeys(slides))


def deck_summary(session: DeckSession, slides: list[int] | None = None) -> Reply:
    """The deck engine's JSON summary of the working copy (chosen slides only when ``slides``)."""
    from pptarena.deck import summarize

    snap, _digest = session.snapshot()
    summary = summarize(snap)
    all_slides = summary.get("slides") or []
    if slides is not None:
        wanted = set(_slide_numbers(slides, len(all_slides), "deck_summary"))
        summary = {**summary, "slides": [s for s in all_slides if s.get("number") in wanted]}
    summary["file"] = session.work_deck.name
    summary["slide_count"] = len(all_slides)
    text = bounded_list_json(
        summary,
        "slides",
        session.limits.max_summary_chars,
        lambda s: {"number": s.get("number"), "title": s.get("title")},
    )
    return Reply(text)


def deck_diff(session: DeckSession) -> Reply:
    """The deck engine's structural diff from the input deck to the working copy."""
    from pptarena.deck import diff_decks

    snap, _digest = session.snapshot()
    diff = diff_decks(session.baseline, snap).to_json()
    diff["a"], diff["b"] = "input deck", "working copy"
    return Reply(bounded_list_json(diff, "edits", session.limits.max_summary_chars, _edit_label))


def _edit_label(edit: dict[str, Any]) -> dict[str, Any]:
    return {k: edit.get(k) for k in ("kind", "slide", "shape", "path")}


def _need_renderer(session: DeckSession, tool: str) -> Any:
    if session.renderer is None:
        why = f" ({session.renderer_note})" if session.renderer_note else ""
        raise ToolFailure(
            f"{tool}: this server has no renderer{why}; start it with a renderer "
            "(arena mcp --renderer NAME) to render slides"
        )
    if session.counters.renders >= session.limits.max_renders:
        raise ToolFailure(
            f"{tool}: render limit reached ({session.limits.max_renders} renders per session); "
            "use deck_summary and deck_diff to check further edits"
        )
    return session.renderer


def _render(session: DeckSession, snap: Path, digest: str) -> list[Any]:
    """Slide images of the snapshot (cached per deck content); counts one render."""
    session.counters.renders += 1
    cached = session.render_cache.get(digest)
    if cached is not None:
        return cached
    out = session.new_scratch_dir(f"renders/{digest[:16]}")
    deck = out / "deck.pptx"
    deck.write_bytes(snap.read_bytes())
    images = list(session.renderer.render(deck, out / "slides"))  # type: ignore[union-attr]
    session.render_cache.clear()  # only the current version is worth keeping
    session.png_cache.clear()
    session.render_cache[digest] = images
    return images


def render_slides(session: DeckSession, slides: list[int] | None = None) -> Reply:
    """PNG images of chosen slides of the working copy, downscaled and size-capped."""
    from pptarena.mcp.images import fit_png

    limits = session.limits
    _need_renderer(session, "render_slides")
    if slides is not None and len(set(slides)) > limits.max_slides_per_render:
        raise ToolFailure(
            f"render_slides: {len(set(slides))} slides asked for, over the limit of "
            f"{limits.max_slides_per_render} per call; ask in several calls"
        )
    snap, digest = session.snapshot()
    images = _render(session, snap, digest)
    numbers = _slide_numbers(slides, len(images), "render_slides")
    if slides is None and len(numbers) > limits.max_slides_per_render:
        numbers = numbers[: limits.max_slides_per_render]
    by_number = {img.number: img for img in images}
    pngs: list[bytes] = []
    lines: list[str] = []
    total = 0
    for n in numbers:
        img = by_number.get(n)
        if img is None:
            lines.append(f"slide {n}: not rendered")
            continue
        fitted = session.png_cache.get((digest, n))
        if fitted is None:
            fitted = fit_png(Path(img.path), limits.max_image_edge, limits.max_image_bytes)
            session.png_cache[(digest, n)] = fitted
        data, width, height = fitted
        if total + len(data) > limits.max_call_image_bytes:
            lines.append(
                f"slide {n}: left out, the images of one call are capped at "
                f"{limits.max_call_image_bytes} bytes"
            )
            continue
        total += len(data)
        pngs.append(data)
        lines.append(
            f"slide {n}: image {len(pngs)}, {width}x{height} px" + (" (hidden)" if img.hidden else "")
        )
    head = f"{len(pngs)} slide image(s) of the working copy ({len(images)} slides)"
    if slides is None and len(images) > len(numbers):
        head += f"; only the first {len(numbers)} shown, pass `slides` for others"
    return Reply("\n".join([head, *lines]), pngs)


def validate(session: DeckSession) -> Reply:
    """Does the working copy open and summarise, do its XML parts parse, and (with a renderer) does
    it render."""
    from pptarena.deck import DeckError, open_package, summarize

    snap, digest = session.snapshot()
    report: dict[str, Any] = {"opens": False}
    try:
        summary = summarize(snap)
        report["opens"] = True
        report["slides"] = len(summary.get("slides") or [])
    except DeckError as exc:
        report["error"] = str(exc)
    unreadable: list[str] = []
    try:
        with open_package(snap) as pkg:
            for name in pkg.names():
                if name.endswith((".xml", ".rels")):
                    try:
                        pkg.xml(name)
                    except DeckError as exc:
                        unreadable.append(str(exc))
    except DeckError as exc:
        unreadable.append(str(exc))
    report["unreadable_parts"] = unreadable[:50]
    if session.renderer is None:
        report["render"] = "not checked: no renderer" + (
            f" ({session.renderer_note})" if session.renderer_note else ""
        )
    elif session.counters.renders >= session.limits.max_renders:
        report["render"] = f"not checked: render limit reached ({session.limits.max_renders} per session)"
    elif report["opens"]:
        try:
            images = _render(session, snap, digest)
            report["render"] = {"ok": len(images) == report["slides"], "slides_rendered": len(images)}
        except Exception as exc:  # a renderer failure is the answer here, not an error of the call
            report["render"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
    report["ok"] = bool(report["opens"] and not unreadable and not _render_failed(report.get("render")))
    return Reply(_json(report))


def _render_failed(render: Any) -> bool:
    return isinstance(render, dict) and not render.get("ok")


def list_parts(session: DeckSession) -> Reply:
    """The working copy's zip members: name, uncompressed size, and whether write_part may replace it."""
    import zipfile

    from pptarena.deck.parts import EDITABLE

    snap, _digest = session.snapshot()
    try:
        with zipfile.ZipFile(snap) as zf:
            infos = zf.infolist()
    except zipfile.BadZipFile as exc:
        raise ToolFailure(f"the working copy is not a zip package ({exc})") from None
    cap = session.limits.max_list_parts
    rows = [
        {"name": i.filename.lstrip("/"), "bytes": i.file_size, "editable": bool(EDITABLE.match(i.filename))}
        for i in infos[:cap]
    ]
    out: dict[str, Any] = {"count": len(infos), "parts": rows}
    if len(infos) > cap:
        out["truncated"] = f"only the first {cap} of {len(infos)} parts are listed"
    return Reply(_json(out))


def _members(snap: Path) -> list[str]:
    from pptarena.deck import open_package

    with open_package(snap) as pkg:
        return pkg.names()


def read_part(session: DeckSession, name: str) -> Reply:
    """The text of one XML part (``.xml``/``.rels``) of the working copy, named by its zip member name."""
    from pptarena.deck import open_package
    from pptarena.mcp.partnames import check_part_name

    snap, _digest = session.snapshot()
    with open_package(snap) as pkg:
        check_part_name(name, set(pkg.names()))
        if not name.endswith(TEXT_SUFFIXES):
            raise ToolFailure(
                f"{name} is a binary part (media or embedded object): read_part returns XML parts only"
            )
        data = pkg.read(name, session.limits.max_part_bytes)
    return Reply(data.decode("utf-8", errors="replace"))


def write_part(session: DeckSession, name: str, xml: str) -> Reply:
    """Replace one editable XML part of the working copy, with the XML branch's guard (:func:`check_part`)."""
    from pptarena.deck.parts import DeckParts, check_part, write_package
    from pptarena.mcp.partnames import check_part_name

    limit = session.limits.max_part_bytes
    data = xml.encode("utf-8")
    if len(data) > limit:
        raise ToolFailure(f"write_part: {name}: {len(data)} bytes, over the {limit}-byte limit")
    snap, _digest = session.snapshot()
    check_part_name(name, _members(snap))
    with DeckParts(snap) as parts:
        checked = check_part(parts, name, data)
    out = session.new_scratch_dir("write_part") / "deck.pptx"
    write_package(snap, out, {name: checked})
    summary = session.commit(out)
    return Reply(
        f"{name} replaced ({len(checked)} bytes); the working copy has {len(summary.get('slides') or [])} "
        "slides (deck_diff shows the edits)"
    )


def run_python(session: DeckSession, code: str) -> Reply:
    """Run a python-pptx program in the sandbox on a copy of the working copy (``DECK_PATH``);
    when it saves ``DECK_PATH``, that deck becomes the working copy."""
    from pptarena.trust.sandbox import SandboxLimits
    from pptarena.trust.sandbox import run_python as sandboxed

    limits = session.limits
    if len(code) > limits.max_program_chars:
        raise ToolFailure(
            f"run_python: the program is {len(code)} characters, over the {limits.max_program_chars} limit"
        )
    try:
        compile(code, "program.py", "exec")
    except SyntaxError as exc:
        raise ToolFailure(
            f"run_python: the program does not compile: {exc.msg} (line {exc.lineno})"
        ) from None
    snap, _digest = session.snapshot()
    run_dir = session.new_scratch_dir("run_python")
    deck_out = run_dir / "deck.pptx"
    result = sandboxed(
        RUNNER,
        limits=SandboxLimits(timeout=limits.run_python_seconds, memory_mb=limits.run_python_memory_mb),
        extra_files={"program.py": code},
        files={"input.pptx": snap},
        export="deck.pptx",
        export_to=deck_out,
    )
    keep = limits.max_output_chars
    report: dict[str, Any] = {
        "ok": result.ok,
        "returncode": result.returncode,
        "timed_out": result.timed_out,
        "seconds": round(result.duration_s, 2),
        "isolation": result.isolation,
        "stdout": _tail(result.stdout, keep),
        "stderr": _tail(result.stderr, keep),
    }
    if not result.ok:
        report["deck"] = "unchanged (the program failed)"
    elif result.exported and deck_out.is_file():
        summary = session.commit(deck_out)
        report["deck"] = f"saved: the working copy now has {len(summary.get('slides') or [])} slides"
    else:
        report["deck"] = "unchanged (the program did not save DECK_PATH)"
    if result.notes:
        report["notes"] = result.notes[:10]
    text = _json(report)
    if not result.ok:
        raise ToolFailure(f"run_python: the program failed: {text}")
    return Reply(text)


def _tail(text: str, keep: int) -> str:
    if len(text) <= keep:
        return text
    return f"…[{len(text) - keep} characters cut]…" + text[-keep:]
