"""Deck pairs (original, edited) built from real corpus decks, for the PPT-Eval differential tests.

Each pair names the rows of issue 19's table it exercises. Edits are made the two ways agents
make them: with python-pptx (which renumbers slide part names when it saves, unless the slide
list was reordered after it last listed the slides: then the names go stale) and by rewriting
XML members of the zip directly.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

from lxml import etree

from tests.support.paths import CORPUS

P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
P = f"{{{P_NS}}}"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"
P14_NS = "http://schemas.microsoft.com/office/powerpoint/2010/main"

BROWNBAG = "openxmlsdk_Bug571679_Brownbag.pptx"  # 18 slides, animations, 2 transitions, notes
PERF = "openxmlsdk_o09_Performance_typical.pptx"  # 11 slides, a transition on each
STRESS = "poi_stress013.pptx"  # 23 slides, animations, transitions, notes
GOOGLE = "unstructured_sample-presentation_google.pptx"  # 4 slides with notes
PLACEHOLDERS = "pythonpptx_ph-populated-placeholders.pptx"  # 9 slides, many layouts
ENTR_EXIT = "openxmlsdk_test_entr_exit.pptx"  # entrance and exit effects
AASCU = "poi_aascu_downloadasset_5864.pptx"  # 34 slides, 26 with animations
PPTM = "poi_PPTWithAttachments.pptm"
STRICT = "openxmlsdk_strict_showComments.pptx"


def zip_edit(src: Path, dst: Path, edits: dict[str, Callable[[bytes], bytes | None]]) -> Path:
    """Copy the zip ``src`` to ``dst`` with member bytes rewritten by ``edits`` (None drops a member)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename in edits:
                data = edits[info.filename](data)
                if data is None:
                    continue
            zout.writestr(info, data)
    return dst


def _slide_parts(path: Path) -> list[str]:
    """Slide part names of ``path`` in slide order (from presentation.xml and its rels)."""
    with zipfile.ZipFile(path) as z:
        pres = etree.fromstring(z.read("ppt/presentation.xml"))
        rels = etree.fromstring(z.read("ppt/_rels/presentation.xml.rels"))
    targets = {r.get("Id"): r.get("Target") for r in rels}
    return [
        "ppt/" + targets[s.get(f"{{{R_NS}}}id")].lstrip("/").removeprefix("ppt/")
        for s in pres.iter(P + "sldId")
    ]


def _xml(fn: Callable[[etree._Element], None]) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        root = etree.fromstring(data)
        fn(root)
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)

    return edit


def _sub(pattern: str, repl: str, count: int = 1) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        text, n = re.subn(pattern, repl, data.decode("utf-8"), count=count)
        assert n or not count, f"pattern {pattern!r} not found"
        return text.encode("utf-8")

    return edit


def _reorder(order: Callable[[list], list]) -> Callable[[bytes], bytes]:
    def fn(root: etree._Element) -> None:
        lst = root.find(P + "sldIdLst")
        items = list(lst)
        for el in items:
            lst.remove(el)
        for el in order(items):
            lst.append(el)

    return _xml(fn)


def _set_timing(xml: str) -> Callable[[bytes], bytes]:
    """Replace (or add) the slide's p:timing with ``xml`` (None-free: pass "" to remove)."""

    def fn(root: etree._Element) -> None:
        for old in root.findall(P + "timing"):
            root.remove(old)
        if xml:
            el = etree.fromstring(f'<p:timing xmlns:p="{P_NS}">{xml}</p:timing>')
            ext = root.find(P + "extLst")
            if ext is not None:
                ext.addprevious(el)
            else:
                root.append(el)

    return _xml(fn)


def _set_transition(xml: str) -> Callable[[bytes], bytes]:
    def fn(root: etree._Element) -> None:
        for old in root.findall(P + "transition"):
            root.remove(old)
        for alt in root.findall(
            "{http://schemas.openxmlformats.org/markup-compatibility/2006}AlternateContent"
        ):
            if alt.find(".//" + P + "transition") is not None:
                root.remove(alt)
        if xml:
            el = etree.fromstring(f'<w xmlns:p="{P_NS}" xmlns:mc="{MC_NS}" xmlns:p14="{P14_NS}">{xml}</w>')[0]
            anchor = root.find(P + "timing")
            if anchor is None:
                anchor = root.find(P + "extLst")
            if anchor is not None:
                anchor.addprevious(el)
            else:
                root.append(el)

    return _xml(fn)


def effect_timing(
    spid: str,
    preset: int,
    cls: str,
    subtype: int,
    node: str = "clickEffect",
    dur: int = 500,
    behaviours: str | None = None,
) -> str:
    """A PowerPoint-style main sequence holding one effect on shape ``spid``."""
    if behaviours is None:
        behaviours = (
            f'<p:set><p:cBhvr><p:cTn id="6" dur="1" fill="hold"><p:stCondLst><p:cond delay="0"/>'
            f'</p:stCondLst></p:cTn><p:tgtEl><p:spTgt spid="{spid}"/></p:tgtEl><p:attrNameLst>'
            f"<p:attrName>style.visibility</p:attrName></p:attrNameLst></p:cBhvr>"
            f'<p:to><p:strVal val="visible"/></p:to></p:set>'
            f'<p:animEffect transition="in" filter="fade"><p:cBhvr><p:cTn id="7" dur="{dur}"/>'
            f'<p:tgtEl><p:spTgt spid="{spid}"/></p:tgtEl></p:cBhvr></p:animEffect>'
        )
    outer = "indefinite" if node == "clickEffect" else "0"
    return (
        f'<p:tnLst><p:par><p:cTn id="1" dur="indefinite" restart="never" nodeType="tmRoot"><p:childTnLst>'
        f'<p:seq concurrent="1" nextAc="seek"><p:cTn id="2" dur="indefinite" nodeType="mainSeq">'
        f"<p:childTnLst>"
        f'<p:par><p:cTn id="3" fill="hold"><p:stCondLst><p:cond delay="{outer}"/></p:stCondLst><p:childTnLst>'
        f'<p:par><p:cTn id="4" fill="hold"><p:stCondLst><p:cond delay="0"/></p:stCondLst><p:childTnLst>'
        f'<p:par><p:cTn id="5" presetID="{preset}" presetClass="{cls}" presetSubtype="{subtype}" fill="hold" '
        f'nodeType="{node}"><p:stCondLst><p:cond delay="0"/></p:stCondLst><p:childTnLst>{behaviours}'
        f"</p:childTnLst></p:cTn></p:par></p:childTnLst></p:cTn></p:par></p:childTnLst></p:cTn></p:par>"
        f'</p:childTnLst></p:cTn><p:prevCondLst><p:cond evt="onPrev" delay="0"><p:tgtEl><p:sldTgt/></p:tgtEl>'
        f'</p:cond></p:prevCondLst><p:nextCondLst><p:cond evt="onNext" delay="0">'
        f"<p:tgtEl><p:sldTgt/></p:tgtEl>"
        f"</p:cond></p:nextCondLst></p:seq></p:childTnLst></p:cTn></p:par></p:tnLst>"
    )


def _first_spid(path: Path, part: str) -> str:
    with zipfile.ZipFile(path) as z:
        root = etree.fromstring(z.read(part))
    return next(el.get("id") for el in root.iter(P + "cNvPr") if el.get("id") not in (None, "1"))


# ----------------------------------------------------------------------------- python-pptx edits


def _pptx(src: Path, dst: Path, edit: Callable) -> Path:
    from pptx import Presentation

    prs = Presentation(str(src))
    edit(prs)
    prs.save(str(dst))
    return dst


def _text_slide(prs, i: int) -> int:
    """The first slide from ``i`` on that has a text frame."""
    return next(k for k in range(i, len(prs.slides)) if any(s.has_text_frame for s in prs.slides[k].shapes))


def _retitle(prs, i: int, text: str) -> None:
    slide = prs.slides[_text_slide(prs, i)]
    shape = slide.shapes.title or next(s for s in slide.shapes if s.has_text_frame)
    shape.text_frame.text = text


def _body(prs, i: int, text: str) -> None:
    slide = prs.slides[_text_slide(prs, i)]
    shapes = [s for s in slide.shapes if s.has_text_frame]
    shapes[-1].text_frame.paragraphs[-1].add_run().text = text


def _notes(prs, i: int, text: str) -> None:
    prs.slides[i].notes_slide.notes_text_frame.text = text


def _add_box(prs, i: int) -> None:
    from pptx.util import Inches

    prs.slides[i].shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1)).text_frame.text = "Added box"


def _drop_shape(prs, i: int) -> None:
    shape = list(prs.slides[i].shapes)[-1]
    shape._element.getparent().remove(shape._element)


def _add_slide(prs) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[min(1, len(prs.slide_layouts) - 1)])
    if slide.shapes.title is not None:
        slide.shapes.title.text = "A new slide"


def _remove_slide(prs, i: int) -> None:
    lst = prs.slides._sldIdLst
    sld = list(lst)[i]
    prs.part.drop_rel(sld.rId)
    lst.remove(sld)


def _move_stale(prs, i: int, j: int) -> None:
    """Move slide i to position j after python-pptx listed the slides: saved part names go stale."""
    _ = list(prs.slides)
    lst = prs.slides._sldIdLst
    items = list(lst)
    el = items[i]
    lst.remove(el)
    lst.insert(j, el)


def _move_renumbered(prs, i: int, j: int) -> None:
    _move_stale(prs, i, j)
    prs.part.rename_slide_parts([s.rId for s in prs.slides._sldIdLst])


def _relayout(prs, i: int) -> None:
    """Point slide i at another layout (only its relationship changes)."""
    slide = prs.slides[i]
    current = slide.slide_layout
    other = next(lay for lay in prs.slide_layouts if lay is not current and lay.name != current.name)
    for rel in slide.part.rels.values():
        if rel.reltype.endswith("/slideLayout"):
            rel._target = other.part


# ----------------------------------------------------------------------------- the pairs


ALT_SHAPE = (
    '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:p14="http://schemas.microsoft.com/office/powerpoint/2010/main" Requires="p14">'
    '<mc:Choice Requires="p14">'
    '<p:sp><p:nvSpPr><p:cNvPr id="901" name="Alt Choice"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/>'
    "<p:txBody><a:bodyPr/><a:p><a:r><a:t>choice</a:t></a:r></a:p></p:txBody></p:sp></mc:Choice><mc:Fallback>"
    '<p:sp><p:nvSpPr><p:cNvPr id="901" name="Alt Fallback"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/>'
    "<p:txBody><a:bodyPr/><a:p><a:r><a:t>fallback</a:t></a:r></a:p></p:txBody></p:sp></mc:Fallback>"
    "</mc:AlternateContent>"
)


ALT_SHAPE_PLAIN = (
    '<p:sp><p:nvSpPr><p:cNvPr id="902" name="Marker"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/></p:sp>'
)


def _add_alt_shape(root: etree._Element) -> None:
    tree = root.find(f"{P}cSld/{P}spTree")
    tree.append(
        etree.fromstring(
            ALT_SHAPE.replace(
                "<p:sp>",
                f'<p:sp xmlns:p="{P_NS}" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">',
            )
        )
    )


def build_pairs(out: Path) -> list[tuple[str, Path, Path, str]]:
    """``(name, original, edited, rows)`` for every pair; decks are written under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    pairs: list[tuple[str, Path, Path, str]] = []

    def deck(name: str) -> Path:
        return CORPUS / name

    def add(name: str, src: str, rows: str, make: Callable[[Path, Path], Path]) -> None:
        dst = out / f"{len(pairs):02d}-{name}.pptx"
        pairs.append((name, deck(src), make(deck(src), dst), rows))

    def raw(
        edits_of: Callable[[Path], dict[str, Callable[[bytes], bytes | None]]],
    ) -> Callable[[Path, Path], Path]:
        return lambda s, d: zip_edit(s, d, edits_of(s))

    def py(edit: Callable) -> Callable[[Path, Path], Path]:
        return lambda s, d: _pptx(s, d, edit)

    copy = lambda s, d: Path(shutil.copyfile(s, d))  # noqa: E731
    for src in (GOOGLE, BROWNBAG, PERF):
        add("identical", src, "baseline", copy)
        add("resaved-by-python-pptx", src, "3", py(lambda prs: None))
    add("retitle", GOOGLE, "1", py(lambda prs: _retitle(prs, 1, "A new title")))
    add("retitle", PLACEHOLDERS, "1", py(lambda prs: _retitle(prs, 0, "Retitled")))
    add("retitle", STRESS, "1 3", py(lambda prs: _retitle(prs, 4, "Stress title")))
    add("body-edit", GOOGLE, "1", py(lambda prs: _body(prs, 2, "Edited body text")))
    add("notes-only", GOOGLE, "1 8", py(lambda prs: _notes(prs, 0, "Speaker notes rewritten")))
    add("notes-only", STRESS, "1 8", py(lambda prs: _notes(prs, 2, "New notes on slide 3")))
    add(
        "notes-only-raw",
        BROWNBAG,
        "1 8",
        raw(
            lambda s: {
                "ppt/notesSlides/notesSlide1.xml": _sub(r"<a:t>[^<]*</a:t>", "<a:t>Changed note text</a:t>")
            }
        ),
    )
    add("layout-only", PLACEHOLDERS, "1", py(lambda prs: _relayout(prs, 2)))
    add("layout-only", GOOGLE, "1", py(lambda prs: _relayout(prs, 1)))
    add("slide-added", GOOGLE, "slides", py(_add_slide))
    add("slide-added", PERF, "slides 3", py(_add_slide))
    add("slide-removed", PERF, "slides 3", py(lambda prs: _remove_slide(prs, 3)))
    add("slide-removed", BROWNBAG, "slides 3 7", py(lambda prs: _remove_slide(prs, 0)))
    add("slide-moved-renumbered", PERF, "1", py(lambda prs: _move_renumbered(prs, 5, 1)))
    add("slide-moved-stale-names", PERF, "1 3", py(lambda prs: _move_stale(prs, 5, 1)))
    add("slide-moved-stale-names", BROWNBAG, "1 3 7", py(lambda prs: _move_stale(prs, 2, 9)))
    add("slide-moved-stale-names", STRESS, "1 3 7", py(lambda prs: _move_stale(prs, 4, 0)))
    add(
        "slide-moved-raw",
        STRESS,
        "1 3",
        raw(lambda s: {"ppt/presentation.xml": _reorder(lambda xs: xs[::-1])}),
    )
    add("shape-added", GOOGLE, "1", py(lambda prs: _add_box(prs, 3)))
    add("shape-added", PLACEHOLDERS, "1", py(lambda prs: _add_box(prs, 5)))
    add("shape-removed", PLACEHOLDERS, "1", py(lambda prs: _drop_shape(prs, 1)))
    add("shape-removed", BROWNBAG, "1 7", py(lambda prs: _drop_shape(prs, 4)))

    def timing_edit(src: str, index: int, xml: Callable[[str], str]) -> Callable[[Path, Path], Path]:
        def make(s: Path, d: Path) -> Path:
            part = _slide_parts(s)[index]
            return zip_edit(s, d, {part: _set_timing(xml(_first_spid(s, part)))})

        return make

    add(
        "fly-in-with-previous-added",
        GOOGLE,
        "4 7",
        timing_edit(GOOGLE, 1, lambda sp: effect_timing(sp, 2, "entr", 8, "withEffect")),
    )
    add(
        "fly-in-on-click-added",
        GOOGLE,
        "4 7",
        timing_edit(GOOGLE, 2, lambda sp: effect_timing(sp, 2, "entr", 4)),
    )
    add("appear-added", GOOGLE, "7", timing_edit(GOOGLE, 0, lambda sp: effect_timing(sp, 1, "entr", 0)))
    add(
        "fade-added",
        PLACEHOLDERS,
        "7",
        timing_edit(PLACEHOLDERS, 0, lambda sp: effect_timing(sp, 10, "entr", 0)),
    )
    add(
        "exit-added",
        PLACEHOLDERS,
        "7",
        timing_edit(PLACEHOLDERS, 3, lambda sp: effect_timing(sp, 1, "exit", 0, "afterEffect")),
    )
    add(
        "emphasis-added",
        GOOGLE,
        "7",
        timing_edit(
            GOOGLE,
            3,
            lambda sp: effect_timing(
                sp,
                6,
                "emph",
                0,
                behaviours=(
                    '<p:animScale><p:cBhvr><p:cTn id="6" dur="2000" fill="hold"/>'
                    f'<p:tgtEl><p:spTgt spid="{sp}"/></p:tgtEl>'
                    '</p:cBhvr><p:by x="150000" y="150000"/></p:animScale>'
                ),
            ),
        ),
    )
    add(
        "motion-path-added",
        PLACEHOLDERS,
        "7",
        timing_edit(
            PLACEHOLDERS,
            4,
            lambda sp: effect_timing(
                sp,
                42,
                "path",
                0,
                behaviours=(
                    '<p:animMotion origin="layout" path="M 0 0 L 0.25 0.33 E" pathEditMode="relative">'
                    '<p:cBhvr><p:cTn id="6" dur="2000" fill="hold"/>'
                    f'<p:tgtEl><p:spTgt spid="{sp}"/></p:tgtEl></p:cBhvr></p:animMotion>'
                ),
            ),
        ),
    )
    add("animation-removed", BROWNBAG, "7", timing_edit(BROWNBAG, 5, lambda sp: ""))
    add("animation-removed", STRESS, "7", timing_edit(STRESS, 19, lambda sp: ""))
    add("animation-removed", ENTR_EXIT, "7", timing_edit(ENTR_EXIT, 0, lambda sp: ""))

    def anim_sub(
        src: str, index: int, pattern: str, repl: str, count: int = 1
    ) -> Callable[[Path, Path], Path]:
        return lambda s, d: zip_edit(s, d, {_slide_parts(s)[index]: _sub(pattern, repl, count)})

    add("animation-duration", STRESS, "7", anim_sub(STRESS, 4, r'dur="(\d{3,})"', 'dur="2500"'))
    add(
        "animation-trigger",
        STRESS,
        "4 7",
        anim_sub(STRESS, 8, r'nodeType="clickEffect"', 'nodeType="withEffect"'),
    )
    add(
        "animation-trigger",
        PERF,
        "4 7",
        anim_sub(PERF, 1, r'nodeType="clickEffect"', 'nodeType="afterEffect"'),
    )
    add(
        "animation-preset",
        ENTR_EXIT,
        "7",
        anim_sub(ENTR_EXIT, 0, r'presetSubtype="\d+"', 'presetSubtype="2"'),
    )
    add("animation-delay", STRESS, "7", anim_sub(STRESS, 11, r'delay="0"', 'delay="750"', 2))

    def trans_edit(src: str, index: int, xml: str) -> Callable[[Path, Path], Path]:
        return lambda s, d: zip_edit(s, d, {_slide_parts(s)[index]: _set_transition(xml)})

    add(
        "transition-added-dur",
        GOOGLE,
        "2",
        trans_edit(GOOGLE, 1, '<p:transition dur="1200"><p:fade/></p:transition>'),
    )
    add(
        "transition-added-spd",
        GOOGLE,
        "2",
        trans_edit(GOOGLE, 2, '<p:transition spd="slow"><p:push dir="u"/></p:transition>'),
    )
    add(
        "transition-added-sound-first",
        PLACEHOLDERS,
        "2",
        trans_edit(
            PLACEHOLDERS, 1, '<p:transition><p:sndAc><p:endSnd/></p:sndAc><p:wipe dir="r"/></p:transition>'
        ),
    )
    add("transition-removed", PERF, "2", trans_edit(PERF, 2, ""))
    add(
        "transition-speed-only",
        STRESS,
        "2",
        anim_sub(STRESS, 3, r'<p:transition spd="slow"', '<p:transition spd="fast"'),
    )
    add(
        "transition-speed-only",
        STRESS,
        "2",
        anim_sub(STRESS, 2, r'spd="med" p14:dur="700"', 'spd="fast" p14:dur="300"'),
    )
    add(
        "transition-type",
        PERF,
        "2",
        trans_edit(PERF, 6, '<p:transition spd="med"><p:push dir="d"/></p:transition>'),
    )
    add(
        "transition-p14-dur",
        STRESS,
        "2",
        trans_edit(
            STRESS,
            0,
            (
                '<mc:AlternateContent><mc:Choice Requires="p14">'
                '<p:transition spd="slow" p14:dur="2000"><p:fade/></p:transition>'
                '</mc:Choice><mc:Fallback><p:transition spd="slow"><p:fade/></p:transition></mc:Fallback>'
                "</mc:AlternateContent>"
            ),
        ),
    )
    add(
        "mc-alternate-shape",
        GOOGLE,
        "9",
        lambda s, d: zip_edit(s, d, {_slide_parts(s)[0]: _xml(_add_alt_shape)}),
    )

    def unnamed_layouts(s: Path) -> dict[str, Callable[[bytes], bytes | None]]:
        with zipfile.ZipFile(s) as z:
            layouts = [n for n in z.namelist() if n.startswith("ppt/slideLayouts/slideLayout")]
        edits: dict[str, Callable[[bytes], bytes | None]] = {
            n: _sub(r' name="[^"]*"', "", 0) for n in layouts
        }
        for part in _slide_parts(
            s
        ):  # every slide edited, so each unnamed layout guess shows in modified_slides
            edits[part] = _sub(r"</p:spTree>", ALT_SHAPE_PLAIN + "</p:spTree>")
        return edits

    add("unnamed-layouts", PLACEHOLDERS, "1 9", raw(unnamed_layouts))
    add("corrupt-truncated", GOOGLE, "10", lambda s, d: Path(d).write_bytes(s.read_bytes()[:20000]) and d)
    add(
        "corrupt-bad-slide-xml", GOOGLE, "10", raw(lambda s: {_slide_parts(s)[1]: lambda b: b[: len(b) // 2]})
    )
    add("corrupt-not-a-zip", PERF, "10", lambda s, d: Path(d).write_bytes(b"this is not a deck") and d)
    add("pptm-retitle", PPTM, "1", py(lambda prs: _retitle(prs, 0, "Macro deck title")))
    add("strict-unreadable", STRICT, "10", copy)
    return pairs
