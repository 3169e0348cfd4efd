"""Slide transitions and animation timelines.

Transition: ``type`` (local name of the effect element, e.g. ``fade``, ``push``, p14 ``vortex``),
``duration_ms`` (p14:dur when present, else dur, else the spd preset: slow 1000, med 750, fast 500),
``speed``, ``direction``, ``advance_on_click`` and ``advance_after_ms``.

Animations: one entry per effect node (a ``p:cTn`` carrying ``presetClass``) in timeline order, so
each effect appears exactly once: ``class`` (entrance, exit, emphasis, path, verb, media),
``preset`` (id) and ``subtype``, ``effect`` (a readable name when the preset is well known),
``target`` (shape id), ``text`` (true when only the text/paragraphs of the target animate),
``trigger`` (on_click, with_previous, after_previous, on_shape_click), ``delay_ms``,
``duration_ms`` and ``order`` (0-based).
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from .read import NS
from .styles import P, local
from .xfind import find_child, find_path

MC = "{" + NS["mc"] + "}"
P14_DUR = "{" + NS["p14"] + "}dur"
MAX_EFFECTS = 10_000

CLASSES = {
    "entr": "entrance",
    "exit": "exit",
    "emph": "emphasis",
    "path": "path",
    "verb": "verb",
    "mediacall": "media",
}
TRIGGERS = {"clickEffect": "on_click", "withEffect": "with_previous", "afterEffect": "after_previous"}
SPEEDS = {"slow": 1000, "med": 750, "fast": 500}

# PowerPoint's preset ids for the common effects (entrance/exit share ids; names are of the effect).
ENTRANCE_EXIT = {
    1: "appear",
    2: "fly",
    3: "blinds",
    4: "box",
    5: "checkerboard",
    6: "circle",
    7: "crawl",
    8: "diamond",
    9: "dissolve",
    10: "fade",
    11: "flash_once",
    12: "peek",
    13: "plus",
    14: "random_bars",
    15: "spiral",
    16: "split",
    17: "stretch",
    18: "strips",
    19: "swivel",
    20: "wedge",
    21: "wheel",
    22: "wipe",
    23: "zoom",
    24: "random_effects",
}
EMPHASIS = {6: "grow_shrink", 8: "spin", 9: "transparency"}


def _ms(raw: str | None) -> int | None:
    if raw is None or raw == "indefinite":
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def transition(sld: etree._Element) -> dict[str, Any] | None:
    """The slide's transition, or None when it has none (mc:Choice preferred over Fallback)."""
    trans = None
    for child in sld:
        if child.tag == P + "transition":
            trans = child
            break
        if child.tag == MC + "AlternateContent":
            for branch in child:
                found = find_child(branch, P + "transition")
                if found is not None:
                    trans = found
                    break
            if trans is not None:
                break
    if trans is None:
        return None
    effect = next(
        (c for c in trans if isinstance(c.tag, str) and local(c) not in ("sndAc", "soundAc", "extLst")), None
    )
    out: dict[str, Any] = {"type": local(effect) if effect is not None else "none"}
    dur = _ms(trans.get(P14_DUR)) or _ms(trans.get("dur"))
    speed = trans.get("spd")
    if speed:
        out["speed"] = speed
    if dur is None:
        dur = SPEEDS.get(speed or "fast", 500)
    out["duration_ms"] = dur
    if effect is not None:
        direction = effect.get("dir") or effect.get("orient")
        if direction:
            out["direction"] = direction
    if trans.get("advClick") in ("0", "false"):
        out["advance_on_click"] = False
    adv = _ms(trans.get("advTm"))
    if adv is not None:
        out["advance_after_ms"] = adv
    return out


def _effect_name(cls: str | None, preset: int | None) -> str | None:
    if preset is None:
        return None
    if cls in ("entr", "exit"):
        return ENTRANCE_EXIT.get(preset)
    if cls == "emph":
        return EMPHASIS.get(preset)
    if cls == "path":
        return "custom_path" if preset == 0 else "motion_path"
    return None


def _int(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def animations(sld: etree._Element) -> list[dict[str, Any]]:
    """The animation effects of a slide in timeline order (each effect once)."""
    timing = find_child(sld, P + "timing")
    if timing is None:
        return []
    out: list[dict[str, Any]] = []
    for ctn in timing.iter(P + "cTn"):
        cls = ctn.get("presetClass")
        if cls is None:
            continue
        if len(out) >= MAX_EFFECTS:
            break
        effect: dict[str, Any] = {"class": CLASSES.get(cls, cls)}
        preset = _int(ctn.get("presetID"))
        effect["preset"] = preset
        subtype = _int(ctn.get("presetSubtype"))
        if subtype:
            effect["subtype"] = subtype
        name = _effect_name(cls, preset)
        if name:
            effect["effect"] = name
        target = None
        text_only = False
        for sp_tgt in ctn.iter(P + "spTgt"):
            target = _int(sp_tgt.get("spid"))
            text_only = find_child(sp_tgt, P + "txEl") is not None
            break
        effect["target"] = target
        if text_only:
            effect["text"] = True
        trigger = TRIGGERS.get(ctn.get("nodeType") or "", ctn.get("nodeType"))
        seq = next((a for a in ctn.iterancestors(P + "seq")), None)
        if seq is not None:
            seq_ctn = find_child(seq, P + "cTn")
            if seq_ctn is not None and seq_ctn.get("nodeType") == "interactiveSeq":
                trigger = "on_shape_click"
        effect["trigger"] = trigger
        delay = None
        cond = find_path(ctn, P + "stCondLst", P + "cond")
        if cond is not None:
            delay = _ms(cond.get("delay"))
        effect["delay_ms"] = delay or 0
        durations = [d for d in (_ms(c.get("dur")) for c in ctn.iter(P + "cTn")) if d is not None]
        effect["duration_ms"] = max(durations) if durations else 0
        effect["order"] = len(out)
        out.append(effect)
    return out
