"""Checks used as PPT-Eval function leaves in the demo rubrics.

Each ``check_*`` function takes ``(original_ppt_path, modified_ppt_path, **params)`` and returns
``(reason, score)`` with ``score`` in [0, 1]. :func:`leaf_code` turns one into the source of a
PPT-Eval leaf: a zero-argument ``compute_score()`` that nests the check and the helpers it
uses (top-level helpers would be invisible to ``compute_score`` under ai-rubric's ``exec``) and
calls it with the context names ``original_ppt_path`` / ``modified_ppt_path``.

The functions only use python-pptx and its lxml elements, so the leaves run wherever the
published PPT-Eval leaves run.

Why it is long: it is the catalogue of every check the twelve demo rubrics use (text, slide order,
tables, charts, colours, pictures, layouts, transitions, links, animations), and :func:`leaf_code`
nests only the helpers this module lists (:data:`HELPERS`), so the checks, their helpers and that
list stay together.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

# --------------------------------------------------------------------------- helpers


def open_deck(path):
    """The python-pptx Presentation at ``path``."""
    from pptx import Presentation

    return Presentation(path)


def slide_title(slide):
    """The slide's title text ('' when it has no title placeholder)."""
    shape = slide.shapes.title
    if shape is None or not shape.has_text_frame:
        return ""
    return shape.text_frame.text.strip()


def slide_text(slide):
    """All text on a slide: text frames and table cells, in shape order."""
    parts = []
    for shape in slide.shapes:
        if shape.has_text_frame:
            parts.append(shape.text_frame.text)
        if getattr(shape, "has_table", False) and shape.has_table:
            for row in shape.table.rows:
                for cell in row.cells:
                    parts.append(cell.text)
    return "\n".join(parts)


def table_rows(slide):
    """Cell texts of the first table on the slide (None when there is none)."""
    for shape in slide.shapes:
        if getattr(shape, "has_table", False) and shape.has_table:
            return [[cell.text.strip() for cell in row.cells] for row in shape.table.rows]
    return None


def first_table(slide):
    """The first python-pptx table on the slide, or None."""
    for shape in slide.shapes:
        if getattr(shape, "has_table", False) and shape.has_table:
            return shape.table
    return None


def first_chart(slide):
    """The first chart on the slide, or None."""
    for shape in slide.shapes:
        if getattr(shape, "has_chart", False) and shape.has_chart:
            return shape.chart
    return None


def body_placeholders(slide):
    """Body/content placeholders of the slide, by placeholder idx."""
    bodies = [ph for ph in slide.placeholders if ph.placeholder_format.type in (2, 7)]
    return sorted(bodies, key=lambda ph: ph.placeholder_format.idx)


def paragraph_texts(shape):
    """Non-empty paragraph texts of a shape's text frame."""
    return [p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip()]


def rgb_of(font):
    """The font's explicit RGB colour as 'RRGGBB', or None."""
    try:
        return str(font.color.rgb) if font.color.type is not None and font.color.rgb is not None else None
    except AttributeError:
        return None


HELPERS: tuple[Callable[..., Any], ...] = (
    open_deck,
    slide_title,
    slide_text,
    table_rows,
    first_table,
    first_chart,
    body_placeholders,
    paragraph_texts,
    rgb_of,
)

# --------------------------------------------------------------------------- text and structure


def check_typos_fixed(original_ppt_path, modified_ppt_path, slide, fixes):
    """Score = share of (wrong, right) pairs where slide ``slide`` has ``right`` and not ``wrong``."""
    deck = open_deck(modified_ppt_path)
    if len(deck.slides) < slide:
        return f"the deck has no slide {slide}", 0.0
    text = slide_text(deck.slides[slide - 1])
    fixed = [right for wrong, right in fixes if right in text and wrong not in text]
    return f"{len(fixed)} of {len(fixes)} misspellings corrected on slide {slide}", len(fixed) / len(fixes)


def check_wording_kept(original_ppt_path, modified_ppt_path, slide, fixes):
    """1 when slide ``slide`` reads exactly like the original with only ``fixes`` applied."""
    before = slide_text(open_deck(original_ppt_path).slides[slide - 1])
    deck = open_deck(modified_ppt_path)
    if len(deck.slides) < slide:
        return f"the deck has no slide {slide}", 0.0
    for wrong, right in fixes:
        before = before.replace(wrong, right)
    after = slide_text(deck.slides[slide - 1])
    if after == before:
        return "no other wording changed", 1.0
    return "other wording on the slide changed too", 0.0


def check_other_slides_unchanged(original_ppt_path, modified_ppt_path, skip):
    """Share of slides (other than the 1-based numbers in ``skip``) whose text is unchanged."""
    before, after = open_deck(original_ppt_path), open_deck(modified_ppt_path)
    if len(before.slides) != len(after.slides):
        return f"slide count changed from {len(before.slides)} to {len(after.slides)}", 0.0
    compared = [i for i in range(len(before.slides)) if i + 1 not in skip]
    same = [i for i in compared if slide_text(before.slides[i]) == slide_text(after.slides[i])]
    if not compared:
        return "no other slides", 1.0
    return f"{len(same)} of {len(compared)} other slides keep their text", len(same) / len(compared)


def check_slide_at(original_ppt_path, modified_ppt_path, title, position):
    """1 when the slide titled ``title`` is at 1-based ``position``."""
    titles = [slide_title(s) for s in open_deck(modified_ppt_path).slides]
    if len(titles) >= position and titles[position - 1] == title:
        return f"'{title}' is slide {position}", 1.0
    where = titles.index(title) + 1 if title in titles else None
    return f"'{title}' is at position {where}, expected {position}", 0.0


def check_slides_kept(original_ppt_path, modified_ppt_path, ignore):
    """Share of original slides still present (same title and text), ignoring titles in ``ignore``."""
    before = [(slide_title(s), slide_text(s)) for s in open_deck(original_ppt_path).slides]
    after = [(slide_title(s), slide_text(s)) for s in open_deck(modified_ppt_path).slides]
    after = [item for item in after if item[0] not in ignore]
    kept = [item for item in before if item in after]
    extra = len(after) - len(kept)
    score = len(kept) / len(before) if not extra else 0.5 * len(kept) / len(before)
    return f"{len(kept)} of {len(before)} original slides kept, {extra} unexpected slide(s)", score


def check_order_kept(original_ppt_path, modified_ppt_path, ignore):
    """1 when the original slides keep their relative order (titles in ``ignore`` skipped)."""
    before = [t for t in (slide_title(s) for s in open_deck(original_ppt_path).slides) if t not in ignore]
    after = [t for t in (slide_title(s) for s in open_deck(modified_ppt_path).slides) if t not in ignore]
    if after == before:
        return "original slides keep their order", 1.0
    return f"slide order is {after}, expected {before}", 0.0


def check_section_slide(original_ppt_path, modified_ppt_path, title, before_title, layout):
    """1 when a slide titled ``title`` using layout ``layout`` sits right before ``before_title``."""
    slides = list(open_deck(modified_ppt_path).slides)
    titles = [slide_title(s) for s in slides]
    if title not in titles:
        return f"no slide titled '{title}'", 0.0
    index = titles.index(title)
    right_place = index + 1 < len(titles) and titles[index + 1] == before_title
    right_layout = slides[index].slide_layout.name == layout
    score = (0.5 if right_place else 0.0) + (0.5 if right_layout else 0.0)
    return (
        f"'{title}' found; directly before '{before_title}': {right_place}; "
        f"layout '{slides[index].slide_layout.name}'"
    ), score


# --------------------------------------------------------------------------- tables and charts


def check_table_row(original_ppt_path, modified_ppt_path, slide, row):
    """Share of ``row``'s cells matched by the table row whose first cell is ``row[0]``."""
    deck = open_deck(modified_ppt_path)
    rows = table_rows(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
    if not rows:
        return f"no table on slide {slide}", 0.0
    for cells in rows:
        if cells and cells[0] == row[0]:
            matched = sum(1 for a, b in zip(cells, row, strict=False) if a == b)
            return f"row '{row[0]}' found with {matched} of {len(row)} expected cells", matched / len(row)
    return f"no row '{row[0]}' in the table", 0.0


def check_table_rows_kept(original_ppt_path, modified_ppt_path, slide):
    """Share of the original table rows still present, unchanged and in order."""
    before = table_rows(open_deck(original_ppt_path).slides[slide - 1]) or []
    deck = open_deck(modified_ppt_path)
    after = (table_rows(deck.slides[slide - 1]) if len(deck.slides) >= slide else None) or []
    position, kept = 0, 0
    for row in before:
        while position < len(after) and after[position] != row:
            position += 1
        if position < len(after):
            kept += 1
            position += 1
    return f"{kept} of {len(before)} original rows kept in order", kept / len(before) if before else 1.0


def check_header_fill(original_ppt_path, modified_ppt_path, slide, colour):
    """Share of header-row cells with a solid fill of ``colour`` ('RRGGBB')."""
    deck = open_deck(modified_ppt_path)
    table = first_table(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
    if table is None:
        return f"no table on slide {slide}", 0.0
    cells = list(table.rows[0].cells)
    good = 0
    for cell in cells:
        try:
            if cell.fill.type == 1 and str(cell.fill.fore_color.rgb) == colour:  # MSO_FILL.SOLID
                good += 1
        except (AttributeError, TypeError):
            pass
    return f"{good} of {len(cells)} header cells filled with #{colour}", good / len(cells)


def check_header_text(original_ppt_path, modified_ppt_path, slide, colour):
    """Share of header-row cells whose text runs are all bold and ``colour``."""
    deck = open_deck(modified_ppt_path)
    table = first_table(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
    if table is None:
        return f"no table on slide {slide}", 0.0
    cells = list(table.rows[0].cells)
    good = 0
    for cell in cells:
        runs = [r for p in cell.text_frame.paragraphs for r in p.runs if r.text.strip()]
        if runs and all(r.font.bold is True and rgb_of(r.font) == colour for r in runs):
            good += 1
    return f"{good} of {len(cells)} header cells have bold #{colour} text", good / len(cells)


def check_table_text_kept(original_ppt_path, modified_ppt_path, slide):
    """1 when every table cell keeps its text."""
    before = table_rows(open_deck(original_ppt_path).slides[slide - 1])
    deck = open_deck(modified_ppt_path)
    after = table_rows(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
    if before == after:
        return "table text unchanged", 1.0
    return "table text changed", 0.0


def check_chart_series(original_ppt_path, modified_ppt_path, slide, name, values):
    """1 when the chart has a series ``name`` with ``values``; 0.5 when the values differ."""
    deck = open_deck(modified_ppt_path)
    chart = first_chart(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
    if chart is None:
        return f"no chart on slide {slide}", 0.0
    for plot in chart.plots:
        for series in plot.series:
            if (series.name or "").strip().lower() == name.lower():
                got = list(series.values)
                ok = len(got) == len(values) and all(
                    g is not None and abs(g - v) < 1e-6 for g, v in zip(got, values, strict=False)
                )
                if ok:
                    return f"series '{name}' has values {got}", 1.0
                return f"series '{name}' has values {got}, expected {list(values)}", 0.5
    return f"the chart has no series '{name}'", 0.0


def check_chart_series_kept(original_ppt_path, modified_ppt_path, slide):
    """Share of the original chart series still present with the same values."""

    def series_of(path):
        deck = open_deck(path)
        chart = first_chart(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
        if chart is None:
            return []
        return [(s.name, tuple(s.values)) for plot in chart.plots for s in plot.series]

    before, after = series_of(original_ppt_path), series_of(modified_ppt_path)
    kept = [s for s in before if s in after]
    return f"{len(kept)} of {len(before)} original series kept", len(kept) / len(before) if before else 1.0


def check_chart_title(original_ppt_path, modified_ppt_path, slide, title):
    """1 when the chart shows the title ``title`` (case-insensitive)."""
    deck = open_deck(modified_ppt_path)
    chart = first_chart(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
    if chart is None or not chart.has_title:
        return "the chart has no title", 0.0
    text = chart.chart_title.text_frame.text.strip() if chart.chart_title.has_text_frame else ""
    if text.lower() == title.lower():
        return f"chart title is '{text}'", 1.0
    return f"chart title is '{text}', expected '{title}'", 0.0


# --------------------------------------------------------------------------- styling and layout


def check_titles_coloured(original_ppt_path, modified_ppt_path, colour):
    """Share of slide titles whose text runs all have the colour ``colour`` ('RRGGBB')."""
    titles = [s.shapes.title for s in open_deck(modified_ppt_path).slides if s.shapes.title is not None]
    good = 0
    for title in titles:
        runs = [r for p in title.text_frame.paragraphs for r in p.runs if r.text.strip()]
        if runs and all(rgb_of(r.font) == colour for r in runs):
            good += 1
    if not titles:
        return "no slide titles found", 0.0
    return f"{good} of {len(titles)} titles are #{colour}", good / len(titles)


def check_pictures_aligned(original_ppt_path, modified_ppt_path, slide, count, tolerance):
    """1 when slide ``slide`` has ``count`` pictures whose tops differ by at most ``tolerance`` EMU."""
    deck = open_deck(modified_ppt_path)
    if len(deck.slides) < slide:
        return f"the deck has no slide {slide}", 0.0
    tops = [s.top for s in deck.slides[slide - 1].shapes if s.shape_type == 13]  # MSO_SHAPE_TYPE.PICTURE
    if len(tops) != count:
        return f"found {len(tops)} pictures, expected {count}", 0.0
    spread = max(tops) - min(tops)
    if spread <= tolerance:
        return f"picture tops differ by {spread} EMU", 1.0
    return f"picture tops differ by {spread} EMU (more than {tolerance})", 0.0


def check_aligned_to_highest(original_ppt_path, modified_ppt_path, slide, tolerance):
    """1 when every picture's top equals the highest original picture top (within ``tolerance``)."""

    def tops(path):
        deck = open_deck(path)
        if len(deck.slides) < slide:
            return []
        return [s.top for s in deck.slides[slide - 1].shapes if s.shape_type == 13]

    highest = min(tops(original_ppt_path))
    after = tops(modified_ppt_path)
    if after and all(abs(t - highest) <= tolerance for t in after):
        return "pictures share the top edge of the highest picture", 1.0
    return f"picture tops {after} are not all at {highest}", 0.0


def check_pictures_geometry_kept(original_ppt_path, modified_ppt_path, slide, tolerance):
    """Share of pictures whose left edge, width and height are unchanged (within ``tolerance``)."""

    def boxes(path):
        deck = open_deck(path)
        if len(deck.slides) < slide:
            return {}
        return {
            s.name: (s.left, s.width, s.height) for s in deck.slides[slide - 1].shapes if s.shape_type == 13
        }

    before, after = boxes(original_ppt_path), boxes(modified_ppt_path)
    good = sum(
        1
        for name, box in before.items()
        if name in after and all(abs(a - b) <= tolerance for a, b in zip(box, after[name], strict=False))
    )
    return f"{good} of {len(before)} pictures keep their size and left edge", good / len(
        before
    ) if before else 1.0


def check_layout(original_ppt_path, modified_ppt_path, slide, layout):
    """1 when slide ``slide`` uses the slide layout named ``layout``."""
    deck = open_deck(modified_ppt_path)
    if len(deck.slides) < slide:
        return f"the deck has no slide {slide}", 0.0
    name = deck.slides[slide - 1].slide_layout.name
    return f"slide {slide} uses layout '{name}'", 1.0 if name == layout else 0.0


def check_bullets_split(original_ppt_path, modified_ppt_path, slide, split):
    """Share of the original bullets that sit in the right column (first ``split`` left, rest right)."""
    before = body_placeholders(open_deck(original_ppt_path).slides[slide - 1])
    bullets = paragraph_texts(before[0])
    deck = open_deck(modified_ppt_path)
    if len(deck.slides) < slide:
        return f"the deck has no slide {slide}", 0.0
    columns = body_placeholders(deck.slides[slide - 1])
    if len(columns) < 2:
        return f"slide {slide} has {len(columns)} content placeholder(s), expected two columns", 0.0
    left, right = paragraph_texts(columns[0]), paragraph_texts(columns[1])
    good = sum(1 for b in bullets[:split] if b in left) + sum(1 for b in bullets[split:] if b in right)
    return f"{good} of {len(bullets)} bullets in the expected column", good / len(bullets)


def check_title_kept(original_ppt_path, modified_ppt_path, slide):
    """1 when slide ``slide`` keeps its title."""
    before = slide_title(open_deck(original_ppt_path).slides[slide - 1])
    deck = open_deck(modified_ppt_path)
    after = slide_title(deck.slides[slide - 1]) if len(deck.slides) >= slide else None
    return (f"title is '{after}'", 1.0) if after == before else (f"title '{before}' became '{after}'", 0.0)


# --------------------------------------------------------------------------- interactivity


def check_transitions_added(original_ppt_path, modified_ppt_path, kind):
    """Share of slides lacking a ``kind`` transition in the original that have one now."""

    def has(slide):
        return bool(slide._element.xpath(".//p:transition/p:" + kind))

    before, after = list(open_deck(original_ppt_path).slides), list(open_deck(modified_ppt_path).slides)
    if len(before) != len(after):
        return "slide count changed", 0.0
    todo = [i for i, s in enumerate(before) if not has(s)]
    done = [i for i in todo if has(after[i])]
    if not todo:
        return "every slide already had the transition", 1.0
    return f"{len(done)} of {len(todo)} slides gained a {kind} transition", len(done) / len(todo)


def check_hyperlink(original_ppt_path, modified_ppt_path, slide, text, url):
    """1 when the runs linking to ``url`` on slide ``slide`` cover ``text``; 0.5 for a shape link."""
    deck = open_deck(modified_ppt_path)
    if len(deck.slides) < slide:
        return f"the deck has no slide {slide}", 0.0
    shape_link = False
    for shape in deck.slides[slide - 1].shapes:
        try:
            shape_link = shape_link or shape.click_action.hyperlink.address == url
        except Exception:
            pass
        if not shape.has_text_frame:
            continue
        for paragraph in shape.text_frame.paragraphs:
            linked = "".join(r.text for r in paragraph.runs if r.hyperlink.address == url)
            if text in linked:
                return f"'{text}' links to {url}", 1.0
    if shape_link:
        return f"a whole shape links to {url}, not the words '{text}'", 0.5
    return f"no text on slide {slide} links to {url}", 0.0


def _entrance_targets(slide, spid):
    """Helper for the animation checks: (paragraph, node_type, is_fade) per entrance effect."""
    from lxml import etree

    namespaces = {"p": "http://schemas.openxmlformats.org/presentationml/2006/main"}

    def find(element, path):
        return etree._Element.xpath(element, path, namespaces=namespaces)

    found = []
    for ctn in find(slide._element, './/p:timing//p:cTn[@presetClass="entr"]'):
        fade = bool(find(ctn, './/p:animEffect[contains(@filter, "fade")]'))
        for target in find(ctn, f'.//p:spTgt[@spid="{spid}"]'):
            ranges = find(target, "./p:txEl/p:pRg")
            paragraph = (
                int(ranges[0].get("st")) if ranges and ranges[0].get("st") == ranges[0].get("end") else None
            )
            found.append((paragraph, ctn.get("nodeType"), fade))
    return found


def check_paragraphs_animated(original_ppt_path, modified_ppt_path, slide, attribute):
    """Per-paragraph entrance effects on the slide's body text.

    ``attribute`` ``"coverage"``: share of paragraphs with their own entrance effect;
    ``"on_click"``: share of those effects starting on a click; ``"fade"``: share that fade.
    """
    deck = open_deck(modified_ppt_path)
    if len(deck.slides) < slide:
        return f"the deck has no slide {slide}", 0.0
    target_slide = deck.slides[slide - 1]
    bodies = body_placeholders(target_slide)
    if not bodies:
        return f"slide {slide} has no body text", 0.0
    count = len(bodies[0].text_frame.paragraphs)
    seen = {}
    for paragraph, node_type, fade in _entrance_targets(target_slide, bodies[0].shape_id):
        if paragraph is not None:
            seen.setdefault(paragraph, (node_type, fade))
    covered = [p for p in range(count) if p in seen]
    if attribute == "coverage":
        return f"{len(covered)} of {count} paragraphs have their own entrance effect", len(covered) / count
    if not covered:
        return "no paragraph has its own entrance effect", 0.0
    if attribute == "on_click":
        good = sum(1 for p in covered if seen[p][0] == "clickEffect")
        return f"{good} of {len(covered)} paragraph effects start on click", good / len(covered)
    good = sum(1 for p in covered if seen[p][1])
    return f"{good} of {len(covered)} paragraph effects are fades", good / len(covered)


# --------------------------------------------------------------------------- leaf source


def _needed_helpers(source: str) -> list[Callable[..., Any]]:
    needed: list[Callable[..., Any]] = []
    changed = True
    text = source
    while changed:
        changed = False
        for helper in (*HELPERS, _entrance_targets):
            if helper not in needed and f"{helper.__name__}(" in text:
                needed.append(helper)
                text += inspect.getsource(helper)
                changed = True
    order = [*HELPERS, _entrance_targets]
    return sorted(needed, key=order.index)


def leaf_code(check: Callable[..., Any], **params: Any) -> str:
    """PPT-Eval ``function_code`` running ``check`` with ``params`` (Python literals)."""
    source = inspect.getsource(check)
    parts = [inspect.getsource(h) for h in _needed_helpers(source)] + [source]
    body = textwrap.indent("\n".join(parts), "    ")
    args = "".join(f", {key}={value!r}" for key, value in params.items())
    return (
        "def compute_score() -> tuple[str, float]:\n"
        f"{body}\n"
        "    try:\n"
        f"        reason, score = {check.__name__}(original_ppt_path, modified_ppt_path{args})\n"
        "    except Exception as exc:  # an unreadable deck fails this check, not the whole rubric\n"
        '        return f"check could not run: {type(exc).__name__}: {exc}", 0.0\n'
        "    return reason, float(max(0.0, min(1.0, score)))\n"
    )
