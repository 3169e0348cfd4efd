"""Slide animations and transitions exactly as PPT-Eval's published ``diff.py`` reads them.

This is the ``semantics="ppteval"`` reading (see docs/judges-rubric.md for why each rule is
kept, and docs/deck.md for the corrected reading in :mod:`pptarena.deck.timing`). Rules, in
the order they apply to one slide XML root:

**Transition**: the first ``p:transition`` anywhere under the root (so an ``mc:Choice`` copy
wins). Type = local name of its first namespaced child not called ``soundAc`` (a ``p:sndAc``
therefore counts), ``"none"`` without one. Duration = its plain ``dur`` attribute in ms / 1000,
0.5 s when absent (``spd`` and ``p14:dur`` are ignored, so a speed-only change is invisible).
Direction = the ``dir`` of the first child that has one.

**Animations** come from the first ``p:timing`` under the root, in five passes:

1. entrance presets (table :data:`ENTRANCE`): every ``p:cTn`` whose ``presetID``,
   ``presetClass`` and ``presetSubtype`` equal a table row (rows in table order, nodes in
   document order) yields one effect per ``p:spTgt`` below it, de-duplicated on
   (shape id, effect name); trigger ``"click"``, delay 0, duration 0.5;
2. exit presets (:data:`EXIT`), trigger ``"on_click"``, duration 0.5;
3. emphasis presets (:data:`EMPHASIS`, subtype 0), trigger ``"with_previous"``, duration 1.0;
4. every ``p:animMotion`` with a ``p:cBhvr`` holding a ``p:tgtEl``/``p:spTgt``: a motion path
   named from its ``path`` letters, trigger ``"on_click"``, duration 2.0, never de-duplicated;
5. a generic pass over every ``animEffect``, ``animMotion``, ``animClr``, ``animRot``,
   ``animScale`` and ``set`` (each kind in document order), then the same search again inside
   every ``p:par`` (so nested behaviours are listed many times). Each candidate is one raw
   effect named by its tag, keyed by its position in that long list, dropped when its shape
   was already named by passes 1-4.

Passes 1-4 number their effects from 0 each (``order``), and pass 5 uses the candidate index;
effects of one slide are compared by ``slide id _ shape id _ order``, so keys collide across
passes and the last effect with a key wins. Element text and type come from shape maps built
the same way PPT-Eval builds them.

Why it is long: it is a faithful copy of one published reading, so it carries PPT-Eval's preset
tables (:data:`ENTRANCE`, :data:`EXIT`, :data:`EMPHASIS`) and the five passes that consume
them; the passes' numbering and key collisions are only right when they run in this order
against these exact tables, so splitting tables from passes would hide what must match.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from .read import NS
from .styles import local

P = "{" + NS["p"] + "}"
A = "{" + NS["a"] + "}"
MAX_CANDIDATES = 200_000  # generic-pass candidates per slide (nested pars square the count)

_FLY = {
    "8": "left",
    "2": "right",
    "4": "top",
    "6": "bottom",
    "1": "top_left",
    "3": "top_right",
    "7": "bottom_left",
    "9": "bottom_right",
}
ENTRANCE: dict[tuple[str, str], str] = {
    **{("2", sub): f"fly_in_from_{side}" for sub, side in _FLY.items()},
    ("1", "0"): "fade_in",
    ("0", "0"): "appear",
    ("5", "8"): "wipe_from_left",
    ("5", "2"): "wipe_from_right",
    ("5", "4"): "wipe_from_top",
    ("5", "6"): "wipe_from_bottom",
    ("13", "10"): "split_horizontal_in",
    ("13", "5"): "split_vertical_in",
    ("3", "5"): "blinds_horizontal",
    ("3", "10"): "blinds_vertical",
    ("4", "5"): "box_in",
    ("4", "0"): "box_out",
    ("6", "5"): "checkerboard_across",
    ("6", "10"): "checkerboard_down",
    ("8", "0"): "dissolve_in",
    ("9", "5"): "random_bars_horizontal",
    ("9", "10"): "random_bars_vertical",
    ("10", "1"): "strips_left_up",
    ("10", "3"): "strips_right_up",
    ("10", "7"): "strips_left_down",
    ("10", "9"): "strips_right_down",
    ("16", "0"): "zoom_in",
    ("16", "1"): "zoom_in_from_screen_center",
    ("16", "2"): "zoom_in_slightly",
    ("14", "8"): "stretch_from_left",
    ("14", "2"): "stretch_from_right",
    ("14", "4"): "stretch_from_top",
    ("14", "6"): "stretch_from_bottom",
    ("15", "0"): "swivel",
    ("11", "0"): "spiral_in",
}
EXIT: dict[tuple[str, str], str] = {
    ("2", "2"): "fly_out_to_right",
    ("2", "8"): "fly_out_to_left",
    ("2", "4"): "fly_out_to_top",
    ("2", "6"): "fly_out_to_bottom",
    ("1", "0"): "fade_out",
    ("0", "0"): "disappear",
    ("5", "2"): "wipe_out_to_right",
    ("5", "8"): "wipe_out_to_left",
    ("5", "4"): "wipe_out_to_top",
    ("5", "6"): "wipe_out_to_bottom",
    ("13", "10"): "split_horizontal_out",
    ("13", "5"): "split_vertical_out",
    ("4", "0"): "box_out",
    ("16", "0"): "zoom_out",
    ("11", "0"): "spiral_out",
}
_EMPH_NAMES = [
    "color_emphasis",
    "pulse",
    "grow_shrink",
    "spin",
    "transparency",
    "bold_flash",
    "bold_reveal",
    "wave",
    "lighten",
    "darken",
    "complementary_color",
    "complementary_color_2",
    "contrasting_color",
    "brush_on_color",
    "reveal_underline",
    "underline",
    "style_emphasis",
    "font_color",
    "teeter",
    "flicker",
]
_EMPH_IDS = [
    "19",
    "1",
    "2",
    "3",
    "18",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "10",
    "11",
    "12",
    "13",
    "14",
    "15",
    "16",
    "17",
    "20",
]
EMPHASIS: dict[tuple[str, str], str] = {
    (pid, "0"): name for pid, name in zip(_EMPH_IDS, _EMPH_NAMES, strict=True)
}

# per preset class: (table, trigger, duration)
PASSES = (
    ("entr", ENTRANCE, "click", 0.5),
    ("exit", EXIT, "on_click", 0.5),
    ("emph", EMPHASIS, "with_previous", 1.0),
)
GENERIC_TAGS = ("animEffect", "animMotion", "animClr", "animRot", "animScale", "set")
EVENTS = {"onBegin": "withPrevious", "onEnd": "afterPrevious", "onDblClick": "onDoubleClick"}
_BLANKS = re.compile(r"[ \t]+")


# ----------------------------------------------------------------------------- shapes


def shape_text(sp: etree._Element) -> str | None:
    """All ``a:t`` texts of a shape joined without separators, stripped, space runs collapsed."""
    text = "".join(t.text for t in sp.iterdescendants(A + "t") if t.text).strip()
    text = _BLANKS.sub(" ", text)
    return text or None


def _first(el: etree._Element, tag: str) -> etree._Element | None:
    return next(el.iterdescendants(tag), None)


def _element_type(sp: etree._Element, name: str) -> str:
    if "TextBox" in name or "Text Box" in name:
        return "textbox"
    if "Title" in name:
        return "title"
    if "Content" in name:  # also covers "Content Placeholder"
        return "content"
    if _first(sp, P + "txBody") is not None:
        return "text_shape"
    sp_pr = _first(sp, P + "spPr")
    geom = _first(sp_pr, A + "prstGeom") if sp_pr is not None else None
    if geom is None:
        return "shape"
    prst = geom.get("prst", "")
    named = {
        "rect": "rectangle",
        "ellipse": "ellipse",
        "star5": "star",
        "star6": "star",
        "star8": "star",
        "rightArrow": "arrow",
        "leftArrow": "arrow",
        "upArrow": "arrow",
        "downArrow": "arrow",
    }
    return named.get(prst, f"shape_{prst}")


def element_map(root: etree._Element) -> dict[str, dict[str, Any]]:
    """Shape id -> text, type and name: every ``p:sp`` in document order, then once more those inside groups.

    A repeated id keeps the last entry written (so a grouped shape beats a loose one).
    """
    out: dict[str, dict[str, Any]] = {}

    def note(sp: etree._Element) -> None:
        nv = _first(sp, P + "nvSpPr")
        c_nv = _first(nv, P + "cNvPr") if nv is not None else None
        if c_nv is None or not c_nv.get("id"):
            return
        name = c_nv.get("name", "")
        out[c_nv.get("id")] = {"text": shape_text(sp), "type": _element_type(sp, name), "name": name}

    for sp in root.iterdescendants(P + "sp"):
        note(sp)
    for group in root.iterdescendants(P + "grpSp"):
        for sp in group.iterdescendants(P + "sp"):
            note(sp)
    return out


def _text_of(root: etree._Element, spid: str | None) -> str | None:
    """Text of the first ``p:sp`` whose first ``p:cNvPr`` has id ``spid``."""
    for sp in root.iterdescendants(P + "sp"):
        c_nv = _first(sp, P + "cNvPr")
        if c_nv is not None and c_nv.get("id") == spid:
            return shape_text(sp)
    return None


# ----------------------------------------------------------------------------- transitions


def transition(root: etree._Element) -> dict[str, Any] | None:
    """``{"transition_type", "duration", "direction"}`` of a slide root, or None without one.

    Raises ``ValueError`` when ``dur`` is not a number (PPT-Eval then skips the slide).
    """
    trans = _first(root, P + "transition")
    if trans is None:
        return None
    kids = [c for c in trans if isinstance(c.tag, str)]
    kind = next((local(c) for c in kids if c.tag.startswith("{") and local(c) != "soundAc"), "none")
    direction = next((c.get("dir") for c in kids if c.get("dir")), None)
    return {
        "transition_type": kind,
        "duration": float(trans.get("dur", "500")) / 1000.0,
        "direction": direction,
    }


# ----------------------------------------------------------------------------- animations


def _effect(
    spid: str | None,
    kind: str,
    trigger: str,
    delay: float,
    duration: float,
    order: int,
    text: str | None,
    etype: str | None,
) -> dict[str, Any]:
    return {
        "element_id": spid,
        "effect_type": kind,
        "trigger": trigger,
        "delay": delay,
        "duration": duration,
        "order": order,
        "element_text": text,
        "element_type": etype,
    }


def _preset_pass(
    timing: etree._Element,
    root: etree._Element,
    cls: str,
    table: dict[tuple[str, str], str],
    trigger: str,
    duration: float,
) -> list[dict[str, Any]]:
    nodes: dict[tuple[str, str], list[etree._Element]] = {}
    for ctn in timing.iterdescendants(P + "cTn"):
        if ctn.get("presetClass") == cls:
            key = (ctn.get("presetID"), ctn.get("presetSubtype"))
            if key in table:
                nodes.setdefault(key, []).append(ctn)  # type: ignore[arg-type]
    out: list[dict[str, Any]] = []
    seen: set[tuple[str | None, str]] = set()
    for key, name in table.items():
        for ctn in nodes.get(key, ()):
            for tgt in ctn.iterdescendants(P + "spTgt"):
                spid = tgt.get("spid")
                if (spid, name) in seen:
                    continue
                seen.add((spid, name))
                etype = "text" if _first(tgt, P + "txEl") is not None else "shape"
                out.append(_effect(spid, name, trigger, 0.0, duration, len(out), _text_of(root, spid), etype))
    return out


def motion_name(path: str) -> str:
    """PPT-Eval's motion-path name from the letters of a ``path`` attribute."""
    path = path.lower()
    if "l" in path:
        return "motion_path_curved" if "c" in path else "motion_path_linear"
    if "c" in path:
        return "motion_path_curve"
    return "motion_path_arc" if "a" in path else "motion_path_custom"


def _motion_pass(timing: etree._Element, root: etree._Element) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for motion in timing.iterdescendants(P + "animMotion"):
        behaviour = _first(motion, P + "cBhvr")
        tgt = None
        if behaviour is not None:
            tgt = next(
                (t for el in behaviour.iterdescendants(P + "tgtEl") for t in el.iterdescendants(P + "spTgt")),
                None,
            )
        if tgt is None:
            continue
        spid = tgt.get("spid")
        etype = "text" if _first(tgt, P + "txEl") is not None else "shape"
        out.append(
            _effect(
                spid,
                motion_name(motion.get("path", "")),
                "on_click",
                0.0,
                2.0,
                len(out),
                _text_of(root, spid),
                etype,
            )
        )
    return out


def _candidates(timing: etree._Element) -> list[etree._Element]:
    scopes = [timing, *timing.iterdescendants(P + "par")]
    out: list[etree._Element] = []
    for scope in scopes:
        for tag in GENERIC_TAGS:
            out.extend(scope.iterdescendants(P + tag))
            if len(out) > MAX_CANDIDATES:
                raise ValueError(f"over {MAX_CANDIDATES} animation behaviours on one slide")
    return out


def _target(el: etree._Element, stop: etree._Element) -> str:
    tgt_el = _first(el, P + "tgtEl")
    if tgt_el is not None:
        for tag in ("spTgt", "inkTgt", "txtTgt"):
            found = _first(tgt_el, P + tag)
            if found is not None:
                spid = found.get("spid", "unknown")
                if spid != "unknown":
                    return spid
                break  # a target without spid: look further up, as PPT-Eval does
    node = el.getparent() if el is not stop else None
    while node is not None:
        tgt_el = _first(node, P + "tgtEl")
        found = _first(tgt_el, P + "spTgt") if tgt_el is not None else None
        if found is not None:
            return found.get("spid", "unknown")
        node = node.getparent() if node is not stop else None
    return "unknown"


def _trigger(el: etree._Element, stop: etree._Element) -> str:
    node: etree._Element | None = el
    while node is not None:
        cond = _first(node, P + "cond")
        if cond is not None:
            event = cond.get("evt", "onClick")
            return EVENTS.get(event, event)
        node = node.getparent() if node is not stop else None
    return "onClick"


def _times(el: etree._Element) -> tuple[float, float]:
    ctn = _first(el, P + "cTn")
    if ctn is None:
        return 0.0, 1.0
    dur = ctn.get("dur", "1000")
    if dur == "indefinite":
        return 0.0, 0.0
    try:
        return float(ctn.get("delay", "0")) / 1000.0, float(dur) / 1000.0
    except ValueError:
        return 0.0, 1.0


def animations(root: etree._Element) -> list[dict[str, Any]]:
    """The five passes over a slide root (effects as dicts without ``slide_id``)."""
    timing = _first(root, P + "timing")
    if timing is None:
        return []
    out: list[dict[str, Any]] = []
    for cls, table, trigger, duration in PASSES:
        out += _preset_pass(timing, root, cls, table, trigger, duration)
    out += _motion_pass(timing, root)
    named = {e["element_id"] for e in out}
    shapes = element_map(root)
    for i, el in enumerate(_candidates(timing)):
        spid = _target(el, timing)
        if spid in named:
            continue
        delay, duration = _times(el)
        info = shapes.get(spid) or {}
        out.append(
            _effect(
                spid, local(el), _trigger(el, timing), delay, duration, i, info.get("text"), info.get("type")
            )
        )
    return out
