"""OSWorld's Impress checkers other than ``compare_pptx_files``, re-implemented on python-pptx.

Each function takes the agent's result (a deck, a LibreOffice settings file or an accessibility
dump, as a path or XML text) and, where the checker has one, the expected value or ``rules``
dict; it returns an :class:`~.pptx_compare.Outcome` (score in [0, 1] and the reason for a score
below 1). Semantics and quirks follow OSWorld's ``desktop_env`` 1.0.2 checkers as described in
``../shared/reference/osworld-impress-format.md`` §4 (e.g. the page-number colour is the
second-to-last sRGB colour under a solid fill of the first slide master, its hex digits read
from offset 1).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

from .pptx_compare import NO_FILL, PICTURE, SOLID, Outcome

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_OOR = "{http://openoffice.org/2001/registry}"
HALF_INCH = 457200  # EMU


def _prs(path: Any) -> Any:
    from pptx import Presentation

    return Presentation(path)


def check_transition(pptx: Any, rules: dict[str, Any]) -> Outcome:
    """1.0 when ``ppt/slides/slide<slide_idx+1>.xml`` has a ``p:transition`` with a
    ``p:<transition_type>`` in it.
    """
    index, kind = rules["slide_idx"], rules["transition_type"]
    member = f"ppt/slides/slide{index + 1}.xml"
    with zipfile.ZipFile(pptx) as zf:
        if member not in zf.namelist():
            return Outcome(0.0, f"the deck has no part {member}")
        root = ET.fromstring(zf.read(member))
    transition = root.find(f".//{_P}transition")
    if transition is None:
        return Outcome(0.0, f"slide {index + 1} has no transition")
    if transition.find(f".//{_P}{kind}") is None:
        return Outcome(0.0, f"slide {index + 1}'s transition is not {kind!r}")
    return Outcome(1.0)


def check_image_stretch_and_center(modified: Any, original: Any) -> Outcome:
    """1.0 when slide 1's first original picture fills the slide (±0.5 in) and is centred (±0.5 in)."""
    orig, mod = _prs(original), _prs(modified)
    pictures = [s for s in orig.slides[0].shapes if s.shape_type == PICTURE]
    if not pictures:
        return Outcome(0.0, "the original's first slide has no picture")
    blob = pictures[0].image.blob
    match = None
    for shape in mod.slides[0].shapes:
        if shape.shape_type == PICTURE and shape.image.blob == blob:
            match = shape  # the last identical picture, as OSWorld keeps it
    if match is None:
        return Outcome(0.0, "the picture is no longer on slide 1")
    width, height = orig.slide_width, orig.slide_height
    off = {
        "width": abs(match.width - width),
        "height": abs(match.height - height),
        "left": abs(match.left - (width - match.width) / 2),
        "top": abs(match.top - (height - match.height) / 2),
    }
    for what, delta in off.items():
        if delta > HALF_INCH:
            return Outcome(0.0, f"picture {what} is {delta:.0f} EMU off (more than 0.5 in)")
    return Outcome(1.0)


def _rgb(color: Any) -> Any:
    try:
        return color.rgb
    except Exception:  # noqa: BLE001 - OSWorld treats any unreadable colour as "no colour"
        return None


def _fill_distance(slide: Any, rgb: list[int], original: Any) -> float:
    """0 (same colour) .. 1 (far, unreadable, unchanged from ``original`` or not a solid fill)."""
    fill = slide.background.fill
    if fill.type == NO_FILL:
        fill = slide.slide_layout.slide_master.background.fill
        if fill.type != SOLID:
            return 1.0
    elif fill.type != SOLID:
        return 1.0
    colour = _rgb(fill.fore_color)
    if colour is None:
        return 1.0
    r, g, b = colour
    if original is not None and (r, g, b) == tuple(original):
        return 1.0
    return math.sqrt((r - rgb[0]) ** 2 + (g - rgb[1]) ** 2 + (b - rgb[2]) ** 2) / math.sqrt(3 * 255**2)


def evaluate_presentation_fill_to_rgb_distance(pptx: Any, rules: dict[str, Any]) -> Outcome:
    """1 − mean over slides of the background's normalised RGB distance to ``rules['rgb']``."""
    prs = _prs(pptx)
    distances = [_fill_distance(s, rules["rgb"], rules.get("original_rgb")) for s in prs.slides]
    score = 1 - sum(distances) / len(distances)
    worst = max(range(len(distances)), key=distances.__getitem__)
    reason = "" if score >= 1 else f"slide {worst + 1}'s background is furthest from {rules['rgb']}"
    return Outcome(score, reason)


def _rgb_hex(value: str) -> tuple[int, int, int]:
    # OSWorld reads the channels at offsets 1, 3, 5 (as if the value started with "#")
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def _colour_is(name: str, value: str, threshold: int = 50) -> bool:
    r, g, b = _rgb_hex(value)
    if name == "red":
        return r > g + threshold and r > b + threshold
    if name == "blue":
        return b > g + threshold and b > r + threshold
    if name == "green":
        return g > r + threshold and g > b + threshold
    if name == "black":
        return r < threshold and g < threshold and b < threshold
    return True  # OSWorld accepts any other colour name


def check_page_number_colors(pptx: Any, rules: dict[str, Any]) -> Outcome:
    """1 when the master's page-number colour (second-to-last solid sRGB colour) is ``rules['color']``."""
    with zipfile.ZipFile(pptx) as zf:
        root = ET.fromstring(zf.read("ppt/slideMasters/slideMaster1.xml"))
    colours = [c for fill in root.iter(f"{_A}solidFill") for c in fill.iter(f"{_A}srgbClr")]
    value = colours[-2].get("val")
    if value is None:
        return Outcome(0.0, "the page-number colour has no value")
    if not _colour_is(rules["color"], value):
        return Outcome(0.0, f"page-number colour {value} is not {rules['color']}")
    return Outcome(1.0)


def check_slide_orientation_portrait(pptx: Any) -> Outcome:
    """1 when the slides are taller than wide."""
    prs = _prs(pptx)
    if prs.slide_width < prs.slide_height:
        return Outcome(1.0)
    return Outcome(0.0, f"slides are {prs.slide_width} x {prs.slide_height} EMU (landscape or square)")


def check_strikethrough(pptx: Any, rules: dict[str, Any]) -> Outcome:
    """1 when the first run of each listed paragraph of each listed shape/slide has a ``strike`` attribute."""
    prs = _prs(pptx)
    try:
        for si in rules["slide_index_s"]:
            slide = prs.slides[si]
            for hi in rules["shape_index_s"]:
                paragraphs = slide.shapes[hi].text_frame.paragraphs
                for pi in rules["paragraph_index_s"]:
                    if "strike" not in paragraphs[pi].runs[0].font._element.attrib:
                        return Outcome(
                            0.0, f"slide {si + 1} shape {hi + 1} paragraph {pi + 1} is not struck through"
                        )
    except Exception as exc:  # noqa: BLE001 - OSWorld scores an unreadable location 0
        return Outcome(0.0, f"cannot read the listed text: {exc}")
    return Outcome(1.0)


def _xml_root(source: Any) -> ET.Element:
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("<")):
        return ET.parse(source).getroot()
    return ET.fromstring(source)


def check_presenter_console_disable(settings: Any) -> Outcome:
    """1.0 when the settings file sets Impress's ``EnablePresenterScreen`` to false."""
    try:
        root = _xml_root(settings)
        for item in root.iter("item"):
            if item.get(f"{_OOR}path") != "/org.openoffice.Office.Impress/Misc/Start":
                continue
            for prop in item.findall("prop"):
                if prop.get(f"{_OOR}name") == "EnablePresenterScreen":
                    value = prop.find("value").text  # type: ignore[union-attr]
                    if value.lower() == "false":  # type: ignore[union-attr]
                        return Outcome(1.0)
                    return Outcome(0.0, f"EnablePresenterScreen is {value}")
    except Exception as exc:  # noqa: BLE001 - OSWorld scores an unreadable settings file 0
        return Outcome(0.0, f"cannot read the settings file: {exc}")
    return Outcome(0.0, "the settings file does not set EnablePresenterScreen")


def check_auto_saving_time(settings: Any, rules: dict[str, Any]) -> Outcome | None:
    """1 when ``AutoSaveTimeIntervall`` equals ``rules['minutes']``; None when the file is not XML."""
    try:
        root = _xml_root(settings)
    except (ET.ParseError, FileNotFoundError):
        return None
    value = None
    for item in root.iter("item"):
        if item.get(f"{_OOR}path") == "/org.openoffice.Office.Common/Save/Document":
            for prop in item.iter("prop"):
                if prop.get(f"{_OOR}name") == "AutoSaveTimeIntervall":
                    value = prop.find(".//value").text  # type: ignore[union-attr]
                    break
    if value is None:
        return Outcome(0.0, "the settings file does not set AutoSaveTimeIntervall")
    if int(value) == rules["minutes"]:
        return Outcome(1.0)
    return Outcome(0.0, f"AutoSaveTimeIntervall is {value}, expected {rules['minutes']}")


def check_left_panel(accessibility_tree: str) -> Outcome:
    """1.0 when the accessibility tree has a ``document-frame`` named "Slides View"."""
    root = ET.fromstring(accessibility_tree)
    if any(node.get("name") == "Slides View" for node in root.iter("document-frame")):
        return Outcome(1.0)
    return Outcome(0.0, "no 'Slides View' document frame: the slide panel is closed")


def compare_images(result: Any, expected: Any) -> Outcome:
    """SSIM of the two images in grey, both resized to the smaller size (tuple order), like OSWorld."""
    if not result or not expected:
        return Outcome(0.0, "an image is missing")
    import numpy as np
    from PIL import Image
    from skimage.metrics import structural_similarity

    a, b = Image.open(result).convert("L"), Image.open(expected).convert("L")
    size = min(a.size, b.size)
    a, b = a.resize(size, Image.Resampling.LANCZOS), b.resize(size, Image.Resampling.LANCZOS)
    score = float(structural_similarity(np.array(a), np.array(b)))
    score = max(0.0, min(1.0, score))
    return Outcome(score, "" if score >= 1 else f"SSIM {score:.4f}")
