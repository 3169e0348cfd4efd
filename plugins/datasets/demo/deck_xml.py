"""OOXML helpers for the demo generator: transitions, animations, slide moves, saving.

python-pptx has no API for transitions and animations; these write the ``p:transition`` and
``p:timing`` elements with lxml, in the order the PresentationML schema requires
(``cSld, clrMapOvr, transition, timing, extLst``).
"""

from __future__ import annotations

import io
import re
import zipfile
from datetime import datetime
from pathlib import Path

from lxml import etree

P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
_P = f"{{{P_NS}}}"
#: Fixed timestamp written into the zip entries and core properties (reproducible bytes).
FIXED_TIME = datetime(2024, 10, 1, 9, 0, 0)


def _p(tag: str, **attrs: str) -> etree._Element:
    return etree.Element(_P + tag, {k: v for k, v in attrs.items()}, nsmap={"p": P_NS})


def _sub(parent: etree._Element, tag: str, **attrs: str) -> etree._Element:
    return etree.SubElement(parent, _P + tag, attrs)


def _insert_in_order(sld: etree._Element, element: etree._Element) -> None:
    """Put ``element`` (a transition or timing) where the schema wants it."""
    after = {"transition": ("cSld", "clrMapOvr"), "timing": ("cSld", "clrMapOvr", "transition")}[
        etree.QName(element).localname
    ]
    index = 0
    for i, child in enumerate(sld):
        if etree.QName(child).localname in after:
            index = i + 1
    sld.insert(index, element)


def set_transition(slide, kind: str = "fade", speed: str = "med", direction: str | None = None) -> None:
    """Give ``slide`` a transition (``fade``, ``push``, ``wipe``, ...), replacing any existing one."""
    sld = slide._element
    for old in sld.findall(_P + "transition"):
        sld.remove(old)
    transition = _p("transition", spd=speed)
    effect = _sub(transition, kind)
    if direction:
        effect.set("dir", direction)
    _insert_in_order(sld, transition)


def _effect_par(
    ids: list[int], spid: int, paragraph: int | None, node_type: str, delay: str
) -> etree._Element:
    """One click group holding a Fade entrance of a shape (or one paragraph of it)."""

    def next_id() -> str:
        ids[0] += 1
        return str(ids[0])

    def target(parent: etree._Element) -> None:
        sp = _sub(_sub(parent, "tgtEl"), "spTgt", spid=str(spid))
        if paragraph is not None:
            _sub(_sub(sp, "txEl"), "pRg", st=str(paragraph), end=str(paragraph))

    outer = _p("par")
    outer_ctn = _sub(outer, "cTn", id=next_id(), fill="hold")
    _sub(_sub(outer_ctn, "stCondLst"), "cond", delay=delay)
    inner = _sub(_sub(outer_ctn, "childTnLst"), "par")
    inner_ctn = _sub(inner, "cTn", id=next_id(), fill="hold")
    _sub(_sub(inner_ctn, "stCondLst"), "cond", delay="0")
    effect = _sub(_sub(inner_ctn, "childTnLst"), "par")
    effect_ctn = _sub(
        effect,
        "cTn",
        id=next_id(),
        presetID="10",
        presetClass="entr",
        presetSubtype="0",
        fill="hold",
        grpId="0",
        nodeType=node_type,
    )
    _sub(_sub(effect_ctn, "stCondLst"), "cond", delay="0")
    behaviours = _sub(effect_ctn, "childTnLst")
    set_el = _sub(behaviours, "set")
    cbhvr = _sub(set_el, "cBhvr")
    set_ctn = _sub(cbhvr, "cTn", id=next_id(), dur="1", fill="hold")
    _sub(_sub(set_ctn, "stCondLst"), "cond", delay="0")
    target(cbhvr)
    _sub(_sub(cbhvr, "attrNameLst"), "attrName").text = "style.visibility"
    _sub(_sub(set_el, "to"), "strVal", val="visible")
    anim = _sub(behaviours, "animEffect", transition="in", filter="fade")
    anim_bhvr = _sub(anim, "cBhvr")
    _sub(anim_bhvr, "cTn", id=next_id(), dur="500")
    target(anim_bhvr)
    return outer


def set_fade_entrance(
    slide, shape_id: int, paragraphs: int | None = None, *, build_text: bool = False
) -> None:
    """Animate a shape with a Fade entrance on click.

    With ``paragraphs=n`` each of the shape's first ``n`` paragraphs fades in on its own click
    (``bldP build="p"``); otherwise the whole shape fades in after the slide appears.
    ``build_text`` adds a ``bldP`` entry for a whole text shape. Replaces existing timing.
    """
    sld = slide._element
    for old in sld.findall(_P + "timing"):
        sld.remove(old)
    timing = _p("timing")
    root_ctn = _sub(
        _sub(_sub(timing, "tnLst"), "par"),
        "cTn",
        id="1",
        dur="indefinite",
        restart="never",
        nodeType="tmRoot",
    )
    seq = _sub(_sub(root_ctn, "childTnLst"), "seq", concurrent="1", nextAc="seek")
    main = _sub(seq, "cTn", id="2", dur="indefinite", nodeType="mainSeq")
    clicks = _sub(main, "childTnLst")
    ids = [2]
    if paragraphs is None:
        clicks.append(_effect_par(ids, shape_id, None, "afterEffect", "indefinite"))
    else:
        for paragraph in range(paragraphs):
            clicks.append(_effect_par(ids, shape_id, paragraph, "clickEffect", "indefinite"))
    for event, tag in (("onPrev", "prevCondLst"), ("onNext", "nextCondLst")):
        cond = _sub(_sub(seq, tag), "cond", evt=event, delay="0")
        _sub(_sub(cond, "tgtEl"), "sldTgt")
    if paragraphs is not None:
        _sub(_sub(timing, "bldLst"), "bldP", spid=str(shape_id), grpId="0", build="p")
    elif build_text:
        _sub(_sub(timing, "bldLst"), "bldP", spid=str(shape_id), grpId="0", animBg="1")
    _insert_in_order(sld, timing)


def move_slide(prs, old_index: int, new_index: int) -> None:
    """Move the slide at ``old_index`` to ``new_index`` (0-based) in the slide list."""
    id_list = prs.slides._sldIdLst
    entry = list(id_list)[old_index]
    id_list.remove(entry)
    id_list.insert(new_index, entry)


def relink_layout(slide, layout) -> None:
    """Point ``slide`` at another slide layout (keeps its shapes and slide id)."""
    from pptx.opc.constants import RELATIONSHIP_TYPE as RT

    for rel in slide.part.rels.values():
        if rel.reltype == RT.SLIDE_LAYOUT:
            rel._target = layout.part
            return
    raise ValueError("slide has no slide-layout relationship")


def save_reproducibly(prs, path: Path) -> None:
    """Save ``prs`` so that the same content always gives the same bytes.

    Core properties get fixed dates and every zip entry the same timestamp.
    """
    props = prs.core_properties
    props.created = FIXED_TIME
    props.modified = FIXED_TIME
    props.last_modified_by = "pptarena demo generator"
    props.revision = 1
    buffer = io.BytesIO()
    prs.save(buffer)
    buffer.seek(0)
    path.write_bytes(_rezip(buffer.getvalue()))


_W3CDTF = re.compile(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(</dcterms:)")


def _rezip(package: bytes) -> bytes:
    """Rewrite a zip package with fixed entry dates; embedded workbooks (chart data) likewise."""
    stamp = FIXED_TIME.timetuple()[:6]
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(package)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.endswith(".xlsx"):
                data = _rezip(data)
            elif info.filename == "docProps/core.xml":
                data = _W3CDTF.sub(
                    rb"\g<1>" + FIXED_TIME.strftime("%Y-%m-%dT%H:%M:%SZ").encode() + rb"\g<2>", data
                )
            fixed = zipfile.ZipInfo(info.filename, date_time=stamp)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            target.writestr(fixed, data)
    return out.getvalue()
