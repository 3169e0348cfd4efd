"""Differential test: our OSWorld checkers against OSWorld's own (desktop-env 1.0.2).

OSWorld's ``desktop_env/evaluators/metrics/slides.py`` is loaded by file path from the wheel that
scripts/setup.sh installs with ``--no-deps`` into ``.venv/ref-osworld`` (it needs only
python-pptx). Every deck pair is built from ../shared/corpus (tests/support/osworld_fixtures.py); both
implementations must give the same score, or both fail on the input.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from pptx.enum.text import PP_ALIGN

from pptarena.plugins.judges.osworld import checks
from pptarena.plugins.judges.osworld.pptx_compare import compare_pptx_files
from tests.support import osworld_fixtures as fx
from tests.support.osworld_fixtures import Case
from tests.support.paths import ROOT

REF = ROOT / ".venv" / "ref-osworld" / "desktop_env" / "evaluators" / "metrics" / "slides.py"

pytestmark = [
    pytest.mark.skipif(
        not REF.is_file(), reason=f"OSWorld's checkers are not installed at {REF} (run scripts/setup.sh)"
    ),
    pytest.mark.skipif(not fx.CORPUS.is_dir(), reason=f"the shared deck corpus {fx.CORPUS} is absent"),
]


@pytest.fixture(scope="module")
def ref() -> Any:
    """OSWorld's slides.py as a module (its debug logging silenced)."""
    spec = importlib.util.spec_from_file_location("osworld_ref_slides", REF)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    logging.getLogger("desktopenv").setLevel(logging.CRITICAL)
    logging.getLogger("desktopenv.metric.slides.debug").disabled = True
    return module


T = "openxmlsdk_AllSlidesConverterSC_chinese.pptx"  # text on 5 slides
D = "docling_powerpoint_comments.pptx"  # text, 3 slides
S = "pythonpptx_shp-shapes.pptx"  # table, pictures, a group
G = "unstructured_group-shapes-nested.pptx"  # nested groups
K = "poi_stress013.pptx"  # tables, pictures, groups, 23 slides
P = "poi_alterman_security2_libreoffice44.pptx"  # pictures and text, 23 slides
X = "poi_themes.pptx"  # theme-colour backgrounds: python-pptx raises
E = "openxmlsdk_Presentation_empty-app.pptx"  # picture + text, 2 slides

NO_SHAPE = {"examine_shape": False}
PRODUCT = "Product Comparison"
ELABORATE = "Elaborate on what you want to discuss."

CASES = [
    Case("identical-text", T),
    Case("identical-tables-groups", K),
    Case("identical-pictures", P),
    Case("identical-groups", G),
    Case("theme-background-raises", X),
    Case("tiny-move-within-tolerance", T, fx.move(0.0002)),
    Case("move", T, fx.move(0.2)),
    Case("move-shape-off", T, fx.move(0.2), NO_SHAPE),
    Case("move-tolerance-0.01", T, fx.move(0.0007), {"approximately_tolerance": 0.01}),
    Case("move-tolerance-default", T, fx.move(0.0007)),
    Case("run-text", D, fx.run_text("something else entirely")),
    Case("run-text-text-off", D, fx.run_text("something else entirely"), {"examine_text": False}),
    Case("font-name", T, fx.set_run("name", "Comic Sans MS")),
    Case("font-name-off", T, fx.set_run("name", "Comic Sans MS"), {"examine_font_name": False}),
    Case("font-size", D, fx.set_run("size", 431800)),
    Case("font-size-off", D, fx.set_run("size", 431800), {"examine_font_size": False}),
    Case("bold-true", D, fx.set_run("bold", True)),
    Case("bold-false-vs-none", D, fx.set_run("bold", False)),
    Case("bold-off", D, fx.set_run("bold", True), {"examine_font_bold": False}),
    Case("italic-true", T, fx.set_run("italic", True)),
    Case("italic-off", T, fx.set_run("italic", True), {"examine_font_italic": False}),
    Case("color", D, fx.run_color("FF0000")),
    Case("color-off", D, fx.run_color("FF0000"), {"examine_color_rgb": False}),
    Case("color-both-explicit", D, fx.run_color("FF0000"), {}, fx.run_color("00FF00")),
    Case("underline", T, fx.set_run("underline", True)),
    Case("underline-false-vs-none", T, fx.set_run("underline", False)),
    Case("underline-off", T, fx.set_run("underline", True), {"examine_font_underline": False}),
    Case("strike", D, fx.strike()),
    Case("strike-off", D, fx.strike(), {"examine_strike_through": False}),
    Case("align-center", T, fx.align(PP_ALIGN.CENTER)),
    Case("align-left-vs-none", T, fx.align(PP_ALIGN.LEFT)),
    Case("align-off", T, fx.align(PP_ALIGN.CENTER), {"examine_alignment": False}),
    Case("level", D, fx.level(2)),
    Case("level-off", D, fx.level(2), {"examine_indent": False}),
    Case("bullet", D, fx.bullet("•")),
    Case("bullet-off", D, fx.bullet("•"), {"examine_bullets": False}),
    Case("bullet-level-only-on-one-side", D, fx.level(1), {"examine_indent": False}),
    Case("background", T, fx.background("0000FF")),
    Case("background-off", T, fx.background("0000FF"), {"examine_background_color": False}),
    Case("notes", D, fx.notes("speaker notes here")),
    Case("notes-off", D, fx.notes("speaker notes here"), {"examine_note": False}),
    Case("extra-slide", D, fx.add_slide),
    Case("extra-slide-off", D, fx.add_slide, {"examine_number_of_slides": False}),
    Case("dropped-shape", T, fx.drop_shape),
    Case("table-cell-bold-ungated", S, fx.table_bold, {"examine_font_bold": False}),
    Case("group-alignment", G, fx.group_align),
    Case("group-alignment-off", G, fx.group_align, {"examine_alignment": False}),
    Case("group-text-removed", S, fx.group_drop_text, {"examine_alignment": False}),
    Case(
        "title-bottom-moved",
        D,
        fx.both(fx.retitle(PRODUCT), fx.shift_down(4_000_000, text=PRODUCT)),
        {**NO_SHAPE, "examine_title_bottom_position": True},
        fx.retitle(PRODUCT),
    ),
    Case(
        "title-bottom-not-moved",
        D,
        fx.retitle(PRODUCT),
        {**NO_SHAPE, "examine_title_bottom_position": True},
        fx.retitle(PRODUCT),
    ),
    Case(
        "title-bottom-other-moved",
        D,
        fx.both(fx.retitle(PRODUCT), fx.move(0.3, slide=1)),
        {**NO_SHAPE, "examine_title_bottom_position": True},
        fx.retitle(PRODUCT),
    ),
    Case(
        "table-bottom-moved",
        D,
        fx.both(fx.add_table(2), fx.shift_down(3_000_000, kind=19, slide=2)),
        {**NO_SHAPE, "examine_table_bottom_position": True},
        fx.add_table(2),
    ),
    Case(
        "table-bottom-not-moved",
        D,
        fx.add_table(2),
        {**NO_SHAPE, "examine_table_bottom_position": True},
        fx.add_table(2),
    ),
    Case(
        "right-moved",
        D,
        fx.both(fx.add_picture(1), fx.shift_right(4_000_000, kind=13, slide=1)),
        {**NO_SHAPE, "examine_right_position": True},
        fx.add_picture(1),
    ),
    Case(
        "right-not-moved",
        D,
        fx.add_picture(1),
        {**NO_SHAPE, "examine_right_position": True},
        fx.add_picture(1),
    ),
    Case(
        "top-moved",
        D,
        fx.both(fx.add_picture(1), fx.shift_down(-1_500_000, kind=13, slide=1)),
        {**NO_SHAPE, "examine_top_position": True},
        fx.add_picture(1),
    ),
    Case(
        "top-not-moved", D, fx.add_picture(1), {**NO_SHAPE, "examine_top_position": True}, fx.add_picture(1)
    ),
    Case(
        "shift-size-elaborate",
        D,
        fx.both(fx.retitle(ELABORATE), fx.resize(1.3, 1.3)),
        {**NO_SHAPE, "examine_shape_for_shift_size": True},
        fx.retitle(ELABORATE),
    ),
    Case("shift-size-other", D, fx.resize(1.3, 1.3), {**NO_SHAPE, "examine_shape_for_shift_size": True}),
    Case("image-size-resized", E, fx.resize(1.2, 1.2, kind=13), {**NO_SHAPE, "examine_image_size": True}),
    Case("image-size-moved", E, fx.move(0.3, kind=13), {**NO_SHAPE, "examine_image_size": True}),
    Case("image-size-text-moved", T, fx.move(0.3), {**NO_SHAPE, "examine_image_size": True}),
    Case(
        "modify-height-picture-wider",
        E,
        fx.resize(1.4, 1.0, kind=13),
        {**NO_SHAPE, "examine_modify_height": True},
    ),
    Case(
        "modify-height-picture-taller",
        E,
        fx.resize(1.0, 1.4, kind=13),
        {**NO_SHAPE, "examine_modify_height": True},
    ),
    Case("modify-height-text-wider", T, fx.resize(1.4, 1.0), {**NO_SHAPE, "examine_modify_height": True}),
    Case("debug-off", T, fx.set_run("name", "Arial"), {"enable_debug": False}),
]


def _score(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """The checker's score, or ``("error", type)`` when it raises."""
    try:
        out = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - both sides must fail alike
        return ("error", type(exc).__name__)
    score = getattr(out, "score", out)
    return None if score is None else float(score)


def test_cases_cover_every_option() -> None:
    """The pairs switch every option of compare_pptx_files at least once."""
    from pptarena.plugins.judges.osworld.pptx_compare import OPTION_KEYS

    used = {k for case in CASES for k in case.options}
    assert OPTION_KEYS - used == set()
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_compare_pptx_files_matches_osworld(case: Case, ref: Any, tmp_path: Path) -> None:
    """Same score as OSWorld's compare_pptx_files on this pair (or both fail)."""
    result, expected = fx.save_pair(case, tmp_path)
    theirs = _score(ref.compare_pptx_files, str(result), str(expected), **case.options)
    ours = _score(compare_pptx_files, str(result), str(expected), **case.options)
    assert ours == theirs, f"{case.name}: ours {ours} vs OSWorld {theirs}"


@pytest.mark.slow
def test_differential_sample_has_both_verdicts(ref: Any, tmp_path: Path) -> None:
    """The sample is informative: OSWorld passes some pairs and fails others."""
    scores = set()
    for case in CASES[:12]:
        result, expected = fx.save_pair(case, tmp_path / case.name)
        scores.add(_score(ref.compare_pptx_files, str(result), str(expected), **case.options))
    assert 1.0 in scores and 0.0 in scores


# --------------------------------------------------------------------------- the other checkers


def _saved(deck: str, edit: Any, folder: Path) -> Path:
    result, _ = fx.save_pair(Case("x", deck, edit), folder)
    return result


@pytest.mark.parametrize(
    "kind, slide, rules",
    [
        ("dissolve", 0, {"slide_idx": 0, "transition_type": "dissolve"}),
        ("fade", 0, {"slide_idx": 0, "transition_type": "dissolve"}),
        (None, 0, {"slide_idx": 0, "transition_type": "dissolve"}),
        ("dissolve", 0, {"slide_idx": 9, "transition_type": "dissolve"}),
    ],
)
def test_check_transition_matches(ref: Any, tmp_path: Path, kind: Any, slide: int, rules: dict) -> None:
    deck = _saved(D, None, tmp_path)
    if kind:
        fx.set_slide_xml(deck, f"ppt/slides/slide{slide + 1}.xml", fx.add_transition(kind))
    assert _score(checks.check_transition, deck, rules) == _score(ref.check_transition, str(deck), rules)


@pytest.mark.parametrize(
    "edit, rules",
    [
        (fx.background("0000FF", every=True), {"rgb": [0, 0, 255]}),
        (fx.background("2020C0", every=True), {"rgb": [0, 0, 255]}),
        (fx.background("FFFFFF", every=True), {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}),
        (fx.background("0000FF"), {"rgb": [0, 0, 255]}),
        (None, {"rgb": [0, 0, 255]}),
    ],
)
def test_fill_distance_matches(ref: Any, tmp_path: Path, edit: Any, rules: dict) -> None:
    deck = _saved(T, edit, tmp_path)
    ours = _score(checks.evaluate_presentation_fill_to_rgb_distance, deck, rules)
    assert ours == _score(ref.evaluate_presentation_fill_to_rgb_distance, str(deck), rules)


@pytest.mark.parametrize(
    "deck_name, value, color",
    [
        (P, "FF0000", "red"),
        (P, "00FF00", "red"),
        (P, "00FF00", "green"),
        (P, "101010", "black"),
        (P, None, "red"),
        (K, None, "blue"),
    ],
)
def test_page_number_colors_matches(ref: Any, tmp_path: Path, deck_name: str, value: Any, color: str) -> None:
    deck = _saved(deck_name, None, tmp_path)
    if value:
        fx.set_slide_xml(deck, "ppt/slideMasters/slideMaster1.xml", fx.recolor_second_last_srgb(value))
    rules = {"color": color}
    assert _score(checks.check_page_number_colors, deck, rules) == _score(
        ref.check_page_number_colors, str(deck), rules
    )


@pytest.mark.parametrize("portrait", [True, False])
def test_orientation_matches(ref: Any, tmp_path: Path, portrait: bool) -> None:
    def edit(prs: Any) -> None:
        if portrait:
            prs.slide_width, prs.slide_height = prs.slide_height, prs.slide_width

    deck = _saved(T, edit, tmp_path)
    assert _score(checks.check_slide_orientation_portrait, deck) == _score(
        ref.check_slide_orientation_Portrait, str(deck)
    )


@pytest.mark.parametrize(
    "struck, rules",
    [
        (True, {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [0]}),
        (False, {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [0]}),
        (True, {"slide_index_s": [0], "shape_index_s": [40], "paragraph_index_s": [0]}),
    ],
)
def test_strikethrough_matches(ref: Any, tmp_path: Path, struck: bool, rules: dict) -> None:
    deck = _saved(D, fx.strike() if struck else None, tmp_path)
    assert _score(checks.check_strikethrough, deck, rules) == _score(
        ref.check_strikethrough, str(deck), rules
    )


START = "/org.openoffice.Office.Impress/Misc/Start"
SAVE = "/org.openoffice.Office.Common/Save/Document"


@pytest.mark.parametrize(
    "text",
    [
        fx.xcu({START: {"EnablePresenterScreen": "false"}}),
        fx.xcu({START: {"EnablePresenterScreen": "true"}}),
        fx.xcu({SAVE: {"AutoSaveTimeIntervall": "3"}}),
        "not xml at all",
    ],
)
def test_settings_checkers_match(ref: Any, tmp_path: Path, text: str) -> None:
    path = tmp_path / "registrymodifications.xcu"
    path.write_text(text, encoding="utf-8")
    assert _score(checks.check_presenter_console_disable, path) == _score(
        ref.check_presenter_console_disable, str(path)
    )
    for minutes in (3, 10):
        rules = {"minutes": minutes}
        ours = _score(checks.check_auto_saving_time, path, rules)
        assert ours == _score(ref.check_auto_saving_time, str(path), rules)


@pytest.mark.parametrize(
    "tree",
    [
        '<desktop-frame><document-frame name="Slides View"/></desktop-frame>',
        '<desktop-frame><panel><document-frame name="Outline"/></panel></desktop-frame>',
    ],
)
def test_left_panel_matches(ref: Any, tree: str) -> None:
    assert _score(checks.check_left_panel, tree) == _score(ref.check_left_panel, tree)


def test_image_stretch_matches(ref: Any, tmp_path: Path) -> None:
    """Stretched and centred, not stretched, and picture replaced: same verdicts."""
    deck = "markitdown_ocr_complex_layout.pptx"  # one slide with a picture
    original = _saved(deck, None, tmp_path / "o")

    def stretch(prs: Any) -> None:
        pic = fx.first_shape(prs, 13, 0)
        pic.left, pic.top, pic.width, pic.height = 0, 0, prs.slide_width, prs.slide_height

    def drop(prs: Any) -> None:
        pic = fx.first_shape(prs, 13, 0)
        pic._element.getparent().remove(pic._element)

    verdicts = set()
    for name, edit in (("stretched", stretch), ("as-is", None), ("gone", drop)):
        modified = _saved(deck, edit, tmp_path / name)
        ours = _score(checks.check_image_stretch_and_center, modified, original)
        assert ours == _score(ref.check_image_stretch_and_center, str(modified), str(original)), name
        verdicts.add(ours)
    assert verdicts == {0.0, 1.0}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
