"""The ``xml`` branch: the model picks OOXML parts and returns them rewritten whole.

A run makes one planning call (``selection = "model"``: the request, the deck
summary and the list of editable parts in, ``{"parts": [...]}`` out; an
unusable answer falls back to the heuristic, which is also the
``selection = "heuristic"`` mode: the slides the instruction names, else every
slide, plus theme and masters when the request is about the design). The
picked parts (bounded by ``max_parts`` and ``max_xml_chars``) go to the edit
call with their relationship ids. Each reply is read as
``MODIFIED_XML_FILE: <part>`` + a fenced block per part (or JSON
``{"modified_files": {part: xml}}``), every part is checked
(:func:`.package_parts.check_part`), the package is rewritten and the result
checked like any candidate. Every applied patch is logged (``xml_patch``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pptarena.models import Message
from pptarena.plugins.agents.pptpilot.branch import Branch, CandidateError, Unchanged
from pptarena.plugins.agents.pptpilot.context import (
    EditRequest,
    find_json_object,
    mentioned_slides,
    request_text,
    summary_text,
)
from pptarena.plugins.agents.pptpilot.package_parts import DeckParts, PartError, check_part, write_package

_MARKER = re.compile(r"MODIFIED_XML_FILE:\s*[`*\"']*/?([A-Za-z0-9_./\-]+?)[`*\"']*\s*$", re.MULTILINE)
_FENCE = re.compile(r"```[ \t]*[A-Za-z]*[ \t]*\r?\n(.*?)```", re.DOTALL)
_NO_CHANGE = re.compile(r"^\W*no changes? (?:is |are )?needed", re.IGNORECASE)
_DESIGN_WORDS = re.compile(
    r"\b(theme|master|colou?r scheme|every slide|all slides|whole deck|entire deck)\b", re.I
)


def parse_xml_reply(reply: str) -> dict[str, str]:
    """Part name → new XML text from an edit reply.

    Raises :class:`Unchanged` for "No changes needed." and :class:`CandidateError`
    when the reply holds no usable part.
    """
    markers = list(_MARKER.finditer(reply))
    if markers:
        out: dict[str, str] = {}
        for i, m in enumerate(markers):
            end = markers[i + 1].start() if i + 1 < len(markers) else len(reply)
            segment = reply[m.end() : end]
            fence = _FENCE.search(segment)
            body = fence.group(1) if fence else segment.strip()
            if not body.strip().startswith("<"):
                raise CandidateError(f"no XML follows MODIFIED_XML_FILE: {m.group(1)}")
            out[m.group(1)] = body.strip()
        return out
    obj = find_json_object(reply)
    if obj is not None and isinstance(obj.get("modified_files"), dict):
        files = {str(k).lstrip("/"): str(v) for k, v in obj["modified_files"].items()}
        if not files:
            raise Unchanged()
        return files
    if _NO_CHANGE.search(reply.strip()):
        raise Unchanged()
    raise CandidateError(
        "the answer holds no parts: write MODIFIED_XML_FILE: <part name> followed by the complete part "
        'in a ```xml block, or "No changes needed."'
    )


def heuristic_parts(instruction: str, editable: list[str], slide_parts: list[str]) -> list[str]:
    """Parts a request probably needs: the slides it names (else all), plus theme/masters for design
    requests.
    """
    named = mentioned_slides(instruction, len(slide_parts))
    picked = [slide_parts[n - 1] for n in named] if named else list(slide_parts)
    if _DESIGN_WORDS.search(instruction):
        picked += [p for p in editable if p.startswith(("ppt/theme/", "ppt/slideMasters/"))]
    return picked


def part_manifest(parts: DeckParts, summary: dict[str, Any]) -> str:
    """The editable parts, one per line, with slide numbers/titles and layout names."""
    titles = {s["part"]: (s["number"], s.get("title")) for s in summary.get("slides") or []}
    layouts = {
        lay["part"]: lay.get("name") for m in summary.get("masters") or [] for lay in m.get("layouts") or []
    }
    lines = []
    for name in parts.editable():
        size = len(parts.text(name))
        if name in titles:
            n, title = titles[name]
            lines.append(f"{name}  (slide {n}: {title or 'no title'}; {size} chars)")
        elif name in layouts:
            lines.append(f"{name}  (layout: {layouts[name] or 'unnamed'}; {size} chars)")
        else:
            lines.append(f"{name}  ({size} chars)")
    return "\n".join(lines)


class XmlBranch(Branch):
    """Edits by rewriting whole OOXML parts, checked before they are applied."""

    name = "xml"

    def __init__(
        self, *, selection: str, max_parts: int, max_xml_chars: int, select_model: str, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.selection = selection
        self.max_parts = max_parts
        self.max_xml_chars = max_xml_chars
        self.select_model = select_model
        self._skipped: list[str] = []

    # -- choosing parts -------------------------------------------------------------

    def choose_parts(self, request: EditRequest, parts: DeckParts, summary: dict[str, Any]) -> list[str]:
        """The parts whose XML goes into the edit prompt (logged as ``xml_parts``)."""
        from pptarena.plugins.agents.pptpilot.prompts import XML_SELECT_SYSTEM

        editable = parts.editable()
        slide_parts = [s["part"] for s in summary.get("slides") or []]
        chosen: list[str] = []
        source = "heuristic"
        reason = ""
        if self.selection == "model":
            prompt = (
                request_text(request)
                + "\n\nDeck summary (JSON):\n"
                + summary_text(summary, self.view.max_summary_chars)
                + "\n\nEditable parts:\n"
                + part_manifest(parts, summary)
            )
            reply = self.caller.call(
                "xml_select", self.select_model, [Message.system(XML_SELECT_SYSTEM), Message.user(prompt)]
            )
            obj = find_json_object(reply)
            raw = obj.get("parts") if obj else None
            if isinstance(raw, list):
                chosen = [str(p).lstrip("/") for p in raw if str(p).lstrip("/") in editable]
                reason = str(obj.get("reason") or "") if obj else ""
                dropped = [str(p) for p in raw if str(p).lstrip("/") not in editable]
                if dropped:
                    self.workspace.log.write(
                        "xml_parts_dropped", parts=dropped, reason="not editable parts of the deck"
                    )
            if chosen:
                source = "model"
        if not chosen:
            chosen = heuristic_parts(request.instruction, editable, slide_parts)
        chosen = list(dict.fromkeys(chosen))
        kept: list[str] = []
        skipped: list[str] = []
        budget = self.max_xml_chars
        for name in chosen:
            size = len(parts.text(name))
            if len(kept) < self.max_parts and size <= budget:
                kept.append(name)
                budget -= size
            else:
                skipped.append(name)
        self.workspace.log.write("xml_parts", source=source, parts=kept, skipped=skipped, reason=reason)
        if not kept:
            raise CandidateError("no part fits the XML budget")
        self._skipped = skipped
        return kept

    # -- branch hooks -----------------------------------------------------------------

    def prepare(self, request: EditRequest, state: Path) -> list[Message]:
        """Pick parts, then build the edit prompt: request, summary, renders, parts with their r:ids."""
        from pptarena.deck import summarize
        from pptarena.plugins.agents.pptpilot.prompts import XML_EDIT_SYSTEM

        summary = summarize(state)
        with DeckParts(state) as parts:
            chosen = self.choose_parts(request, parts, summary)
            blocks = []
            for name in chosen:
                rels = (
                    ", ".join(
                        f"{r.rid} → {r.type} {'(external) ' if r.external else ''}{r.target}"
                        for r in parts.rels(name)
                    )
                    or "none"
                )
                blocks.append(f"=== {name} ===\nRelationships: {rels}\n{parts.text(name)}")
        text: list[Any] = [
            request_text(request),
            "Deck summary (JSON):\n" + summary_text(summary, self.view.max_summary_chars),
            "Parts you may rewrite (current XML):\n\n" + "\n\n".join(blocks),
        ]
        if self._skipped:
            text.append("Parts left out to fit the budget (do not rewrite them): " + ", ".join(self._skipped))
        text += self.slide_views(request, state)
        return [Message.system(XML_EDIT_SYSTEM), Message.user(*text)]

    def produce(self, reply: str, state: Path, candidate: Path, attempt: int) -> dict[str, Any]:
        """Check every returned part and write the package with them."""
        files = parse_xml_reply(reply)
        replacements: dict[str, bytes] = {}
        errors: list[str] = []
        with DeckParts(state) as parts:
            for name, xml in files.items():
                try:
                    replacements[name] = check_part(parts, name, xml.encode("utf-8"))
                except PartError as exc:
                    errors.append(str(exc))
        if errors:
            raise CandidateError("\n".join(errors))
        try:
            write_package(state, candidate, replacements)
        except PartError as exc:
            raise CandidateError(str(exc)) from None
        self.workspace.log.write(
            "xml_patch",
            deck=str(candidate),
            parts={n: len(b) for n, b in replacements.items()},
            attempt=attempt,
        )
        return {"parts": sorted(replacements)}

    def retry_message(self, error: str) -> str:
        """The failure and a request to answer with the complete parts again."""
        from pptarena.plugins.agents.pptpilot.prompts import XML_RETRY

        return XML_RETRY.format(error=error)
