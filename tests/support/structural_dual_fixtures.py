"""Helpers for the structural and dual judge tests: generated decks, edits, a fake renderer, evidence.

The fake renderer draws each slide from the deck engine's summary (shape rectangles in their
fill colour, text as a pattern derived from its content), so an edit changes the picture of
exactly the slide it touches and SSIM picks it up, without LibreOffice.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pptarena.evidence import Evidence
from pptarena.types import Prediction, SlideImage, Task

SLIDE_W, SLIDE_H = 9144000, 6858000


def build_deck(path: Path, slides: int = 3) -> Path:
    """A deck with ``slides`` slides; slide i has a title, a text box ``Body<i>`` and a rectangle
    ``Box<i>``.
    """
    from pptx import Presentation
    from pptx.dml.color import RGBColor
    from pptx.util import Inches

    prs = Presentation()
    for i in range(slides):
        s = prs.slides.add_slide(prs.slide_layouts[5])
        s.shapes.title.text = f"Quarterly review part {i + 1}"
        tb = s.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1.5))
        tb.name = f"Body{i}"
        tb.text_frame.text = f"Revenue grew in region {i + 1} thanks to new customers"
        tb.text_frame.add_paragraph().text = f"Costs were flat in region {i + 1}"
        box = s.shapes.add_shape(1, Inches(5.5), Inches(4), Inches(2), Inches(1))
        box.name = f"Box{i}"
        box.fill.solid()
        box.fill.fore_color.rgb = RGBColor(0x20, 0x40, 0x80)
    prs.save(path)
    return path


def derive(src: Path, dst: Path, *edits: Callable[[Any], None]) -> Path:
    """Copy ``src`` to ``dst`` applying python-pptx ``edits`` (each gets the Presentation)."""
    from pptx import Presentation

    if not edits:
        shutil.copyfile(src, dst)
        return dst
    prs = Presentation(src)
    for fn in edits:
        fn(prs)
    prs.save(dst)
    return dst


def shape(prs: Any, slide: int, name: str) -> Any:
    """The shape called ``name`` on 1-based ``slide``."""
    for sh in prs.slides[slide - 1].shapes:
        if sh.name == name:
            return sh
    raise KeyError(name)


# ------------------------------------------------------------------ edit builders (python-pptx)


def recolor(slide: int, name: str, rgb: tuple[int, int, int]) -> Callable[[Any], None]:
    """Solid fill of a shape."""

    def fn(prs: Any) -> None:
        from pptx.dml.color import RGBColor

        sh = shape(prs, slide, name)
        sh.fill.solid()
        sh.fill.fore_color.rgb = RGBColor(*rgb)

    return fn


def move(slide: int, name: str, dx_in: float = 0.0, dy_in: float = 0.0) -> Callable[[Any], None]:
    """Move a shape by inches."""

    def fn(prs: Any) -> None:
        sh = shape(prs, slide, name)
        sh.left = int(sh.left + dx_in * 914400)
        sh.top = int(sh.top + dy_in * 914400)

    return fn


def retitle(slide: int, text: str) -> Callable[[Any], None]:
    """Replace a slide's title text."""

    def fn(prs: Any) -> None:
        prs.slides[slide - 1].shapes.title.text_frame.text = text

    return fn


def set_text(slide: int, name: str, *paragraphs: str) -> Callable[[Any], None]:
    """Replace a shape's text with ``paragraphs``."""

    def fn(prs: Any) -> None:
        tf = shape(prs, slide, name).text_frame
        tf.text = paragraphs[0]
        for p in paragraphs[1:]:
            tf.add_paragraph().text = p

    return fn


# ------------------------------------------------------------------ fake renderer


class FakeRenderer:
    """Draws slides from the deck summary with Pillow (fast, deterministic, content-sensitive)."""

    def __init__(self, width: int = 320):
        self.width = width
        self.calls: list[Path] = []

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """One PNG per slide, ``slide-NNN.png``."""
        from PIL import Image, ImageDraw

        from pptarena.deck import summarize

        self.calls.append(Path(deck_path))
        summary = summarize(deck_path)
        size = summary.get("slide_size") or {"cx": SLIDE_W, "cy": SLIDE_H}
        w = self.width
        h = max(8, int(w * size["cy"] / size["cx"]))
        sx, sy = w / size["cx"], h / size["cy"]
        out_dir.mkdir(parents=True, exist_ok=True)
        images = []
        for slide in summary["slides"]:
            im = Image.new("RGB", (w, h), "white")
            draw = ImageDraw.Draw(im)
            for sh in slide.get("shapes") or []:
                if sh.get("x") is None or sh.get("cx") is None:
                    continue
                box = [sh["x"] * sx, sh["y"] * sy, (sh["x"] + sh["cx"]) * sx, (sh["y"] + sh["cy"]) * sy]
                fill = ((sh.get("fill") or {}).get("color") or {}).get("rgb")
                if fill:
                    draw.rectangle(box, fill="#" + fill)
                text = sh.get("text") or ""
                if text:
                    digest = hashlib.sha256(text.encode()).digest()
                    step = max(2, int((box[2] - box[0]) / 32))
                    for k, byte in enumerate(digest):
                        x0 = box[0] + k * step
                        if x0 + step > box[2]:
                            break
                        height = (box[3] - box[1]) * (byte / 255.0)
                        draw.rectangle(
                            [x0, box[3] - height, x0 + step - 1, box[3]], fill=(byte % 97, 40, 120)
                        )
            path = out_dir / f"slide-{slide['number']:03d}.png"
            im.save(path)
            images.append(
                SlideImage(slide["number"], slide.get("sld_id"), path, w, h, bool(slide.get("hidden")))
            )
        return images


# ------------------------------------------------------------------ tasks and evidence


def make_case(
    tmp_path: Path,
    original: Path,
    target: Path | None,
    prediction: Path | None,
    *,
    renderer: Any = None,
    model: Callable[[str], Any] | None = None,
    instruction: str = "Make the requested edits.",
    style_target: str | None = "Box filled red; title reads 'Annual review'.",
    name: str = "case",
) -> tuple[Task, Prediction, Evidence]:
    """A task, a prediction and an :class:`Evidence` in ``tmp_path/name``."""
    task = Task(id=name, instruction=instruction, original=original, target=target, style_target=style_target)
    pred = Prediction(path=prediction)
    task_dir = tmp_path / name
    task_dir.mkdir(parents=True, exist_ok=True)
    return task, pred, Evidence(task, pred, task_dir, renderer=renderer, model=model)


def set_margins(slide: int, name: str, inches: float) -> Callable[[Any], None]:
    """Inner left/right margins of a shape's text frame (``bodyPr`` insets: not in the deck summary)."""

    def fn(prs: Any) -> None:
        tf = shape(prs, slide, name).text_frame
        tf.margin_left = tf.margin_right = int(inches * 914400)

    return fn
