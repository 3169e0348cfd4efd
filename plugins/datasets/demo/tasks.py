"""The twelve demo tasks: instruction, style target, scripted edit and PPT-Eval rubric.

Each :class:`DemoTask` names one of the decks in :mod:`demo_decks`; ``edit`` turns a loaded copy
of that deck into the target deck. The rubric leaves (see :mod:`demo_checks`) are written so
that the target deck scores 1.0 on every leaf and the unchanged original 0 on the critical ones.

Why it is long: it is mostly data, the twelve :class:`DemoTask` entries with their instruction,
style target and rubric leaves written out in full, plus the scripted edit each entry names; one
task's parts are read together when a task is changed, so they stay in one table.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pptarena.plugins.datasets.demo import checks
from pptarena.plugins.datasets.demo.deck_xml import (
    move_slide,
    relink_layout,
    set_fade_entrance,
    set_transition,
)

EMU_PER_INCH = 914400
HALF_MM = 18000  # EMU


@dataclass(frozen=True)
class DemoTask:
    """One demo task before it is written to disk."""

    id: str
    deck: str
    instruction: str
    style_target: str
    category: tuple[str, ...]
    edit_type: str
    difficulty: str
    edit: Callable[[Any], None]
    leaves: tuple[dict[str, Any], ...]  # children of the rubric root

    def rubric(self) -> dict[str, Any]:
        """The PPT-Eval rubric JSON of this task."""
        root = node(self.id, self.instruction, True, list(self.leaves))
        return {"root": root, "metadata": {"task": self.instruction}}


def node(name: str, description: str, critical: bool, children: list[dict[str, Any]]) -> dict[str, Any]:
    """A rubric parent node (PPT-Eval key order)."""
    return {
        "name": name,
        "description": description,
        "is_critical": critical,
        "metadata": {},
        "children": children,
    }


def leaf(
    name: str, description: str, critical: bool, check: Callable[..., Any], /, **params: Any
) -> dict[str, Any]:
    """A rubric function leaf running ``check`` with ``params``."""
    return {
        "name": name,
        "description": description,
        "is_critical": critical,
        "metadata": {},
        "scorer": {"type": "function", "function_code": checks.leaf_code(check, **params)},
    }


def _rgb(value: str):
    from pptx.dml.color import RGBColor

    return RGBColor.from_string(value)


# --------------------------------------------------------------------------- edits (target decks)

QBR_TYPOS = [("Quartely", "Quarterly"), ("performence", "performance")]


def edit_fix_typos(prs) -> None:
    """Correct the two misspellings on the agenda slide."""
    for paragraph in prs.slides[1].placeholders[1].text_frame.paragraphs:
        for run in paragraph.runs:
            for wrong, right in QBR_TYPOS:
                run.text = run.text.replace(wrong, right)


LATAM_ROW = ["LATAM", "0.3", "0.4", "0.5", "+25%"]


def edit_add_row(prs) -> None:
    """Append a LATAM row to the regional revenue table (copying the last row's formatting)."""
    frame = next(s for s in prs.slides[2].shapes if s.has_table)
    tbl = frame.table._tbl
    last = tbl.tr_lst[-1]
    new_row = copy.deepcopy(last)
    last.addnext(new_row)
    for tc, value in zip(new_row.tc_lst, LATAM_ROW, strict=True):
        runs = tc.xpath(".//a:r/a:t")
        runs[0].text = value
    frame.height = frame.height + last.h


TARGET_SERIES = ("Target", (3.0, 3.5, 4.5))
CHART_TITLE = "Actual vs target revenue ($M)"


def edit_chart(prs) -> None:
    """Add the Target series and a chart title to the revenue chart."""
    from pptx.chart.data import CategoryChartData

    chart = next(s for s in prs.slides[3].shapes if s.has_chart).chart
    data = CategoryChartData()
    data.categories = ["Q1", "Q2", "Q3"]
    data.add_series("Actual", (3.1, 3.6, 4.2))
    data.add_series(*TARGET_SERIES)
    chart.replace_data(data)
    chart.has_title = True
    chart.chart_title.text_frame.text = CHART_TITLE


def edit_move_next_steps(prs) -> None:
    """Move the last slide (Next steps) to third place."""
    move_slide(prs, len(prs.slides) - 1, 2)


REPORT_URL = "https://intranet.example.com/reports/q3-2024"


def edit_link_report(prs) -> None:
    """Make the words 'full report' on the Next steps slide a hyperlink."""
    paragraph = prs.slides[5].placeholders[1].text_frame.paragraphs[2]
    paragraph.runs[0].text = "Read the "
    linked = paragraph.add_run()
    linked.text = "full report"
    linked.hyperlink.address = REPORT_URL
    tail = paragraph.add_run()
    tail.text = " on the intranet"


TITLE_BLUE = "1F3864"


def edit_title_colour(prs) -> None:
    """Colour every slide title dark blue."""
    for slide in prs.slides:
        for paragraph in slide.shapes.title.text_frame.paragraphs:
            for run in paragraph.runs:
                run.font.color.rgb = _rgb(TITLE_BLUE)


def edit_align_pictures(prs) -> None:
    """Top-align the three bird pictures to the highest one."""
    pictures = [s for s in prs.slides[2].shapes if s.shape_type == 13]
    top = min(p.top for p in pictures)
    for picture in pictures:
        picture.top = top


def edit_fade_everywhere(prs) -> None:
    """Give every slide a Fade transition."""
    for slide in prs.slides:
        set_transition(slide, "fade")


def edit_two_columns(prs) -> None:
    """Switch 'What to expect' to Two Content and move the last three bullets to the right column."""
    slide = prs.slides[2]
    layout = next(layout for layout in prs.slide_layouts if layout.name == "Two Content")
    relink_layout(slide, layout)
    right_layout_ph = next(ph for ph in layout.placeholders if ph.placeholder_format.idx == 2)
    slide.shapes.clone_placeholder(right_layout_ph)
    left = next(ph for ph in slide.placeholders if ph.placeholder_format.idx == 1)
    right = next(ph for ph in slide.placeholders if ph.placeholder_format.idx == 2)
    paragraphs = [p.text for p in left.text_frame.paragraphs]
    left.text_frame.clear()
    left.text_frame.paragraphs[0].text = paragraphs[0]
    for text in paragraphs[1:3]:
        left.text_frame.add_paragraph().text = text
    right.text_frame.paragraphs[0].text = paragraphs[3]
    for text in paragraphs[4:]:
        right.text_frame.add_paragraph().text = text


def edit_animate_bullets(prs) -> None:
    """Fade in each paragraph of 'Your first week' on its own click."""
    slide = prs.slides[1]
    body = slide.placeholders[1]
    set_fade_entrance(slide, body.shape_id, paragraphs=len(body.text_frame.paragraphs))


HEADER_TEAL = "00606B"
WHITE = "FFFFFF"


def edit_table_header(prs) -> None:
    """Teal header row with bold white text in the contacts table."""
    table = next(s for s in prs.slides[4].shapes if s.has_table).table
    for cell in table.rows[0].cells:
        cell.fill.solid()
        cell.fill.fore_color.rgb = _rgb(HEADER_TEAL)
        for paragraph in cell.text_frame.paragraphs:
            for run in paragraph.runs:
                run.font.bold = True
                run.font.color.rgb = _rgb(WHITE)


def edit_reference_section(prs) -> None:
    """Insert a 'Reference' Section Header slide before 'Useful contacts' (the last slide)."""
    layout = next(layout for layout in prs.slide_layouts if layout.name == "Section Header")
    slide = prs.slides.add_slide(layout)
    slide.shapes.title.text = "Reference"
    slide.placeholders[1].text = "Contacts and links for your first month"
    move_slide(prs, len(prs.slides) - 1, len(prs.slides) - 2)


# --------------------------------------------------------------------------- the tasks

INCH = EMU_PER_INCH


def _unchanged(skip: list[int], critical: bool = False) -> dict[str, Any]:
    """The leaf "every slide but those in ``skip`` keeps its text" (tasks that edit some slides)."""
    return leaf(
        "Other slides unchanged",
        "The text of every other slide is unchanged.",
        critical,
        checks.check_other_slides_unchanged,
        skip=skip,
    )


def _text_kept() -> dict[str, Any]:
    """The leaf "every slide keeps its text" (tasks whose edit changes no text)."""
    return leaf(
        "Text unchanged",
        "Every slide keeps its text.",
        False,
        checks.check_other_slides_unchanged,
        skip=[],
    )


TASKS: tuple[DemoTask, ...] = (
    DemoTask(
        id="qbr-fix-typos",
        deck="qbr",
        difficulty="easy",
        category=("Content",),
        edit_type="Text & Typography",
        instruction="Fix the spelling mistakes on the agenda slide (slide 2).",
        style_target="Slide 2 reads 'Quarterly results at a glance' and 'Regional performance'; "
        "every other word, bullet level and format on the slide stays exactly as it was. "
        "No other slide changes.",
        edit=edit_fix_typos,
        leaves=(
            leaf(
                "Misspellings corrected",
                "'Quartely' and 'performence' are corrected on slide 2.",
                True,
                checks.check_typos_fixed,
                slide=2,
                fixes=QBR_TYPOS,
            ),
            leaf(
                "No other wording changed",
                "Apart from the two corrections slide 2 reads as before.",
                False,
                checks.check_wording_kept,
                slide=2,
                fixes=QBR_TYPOS,
            ),
            _unchanged([2]),
        ),
    ),
    DemoTask(
        id="qbr-add-region-row",
        deck="qbr",
        difficulty="medium",
        category=("Content",),
        edit_type="Tables",
        instruction="Add a row for LATAM to the revenue table on slide 3: Q1 0.3, Q2 0.4, Q3 0.5, YoY +25%.",
        style_target="The table on slide 3 gains a sixth row 'LATAM | 0.3 | 0.4 | 0.5 | +25%' below West, "
        "formatted like the other body rows; existing rows are untouched and the table stays "
        "inside the slide.",
        edit=edit_add_row,
        leaves=(
            leaf(
                "LATAM row added",
                "The table has a LATAM row with the given figures.",
                True,
                checks.check_table_row,
                slide=3,
                row=LATAM_ROW,
            ),
            leaf(
                "Existing rows kept",
                "The original rows are unchanged and in order.",
                False,
                checks.check_table_rows_kept,
                slide=3,
            ),
            _unchanged([3]),
        ),
    ),
    DemoTask(
        id="qbr-chart-target",
        deck="qbr",
        difficulty="hard",
        category=("Content",),
        edit_type="Charts",
        instruction="On the revenue chart (slide 4), add a second series named 'Target' with the values 3.0, "
        f"3.5 and 4.5 for Q1 to Q3, and give the chart the title '{CHART_TITLE}'.",
        style_target="Slide 4's clustered column chart shows two series side by side per quarter, 'Actual' "
        f"(3.1, 3.6, 4.2) and 'Target' (3.0, 3.5, 4.5), with the chart title '{CHART_TITLE}' "
        "above the plot and a legend naming both series.",
        edit=edit_chart,
        leaves=(
            node(
                "Chart updated",
                "The chart carries the new series and the title.",
                True,
                [
                    leaf(
                        "Target series added",
                        "A 'Target' series with 3.0, 3.5, 4.5 exists.",
                        True,
                        checks.check_chart_series,
                        slide=4,
                        name=TARGET_SERIES[0],
                        values=TARGET_SERIES[1],
                    ),
                    leaf(
                        "Chart title set",
                        f"The chart title reads '{CHART_TITLE}'.",
                        True,
                        checks.check_chart_title,
                        slide=4,
                        title=CHART_TITLE,
                    ),
                ],
            ),
            leaf(
                "Actual series kept",
                "The original 'Actual' series keeps its values.",
                False,
                checks.check_chart_series_kept,
                slide=4,
            ),
            _unchanged([4]),
        ),
    ),
    DemoTask(
        id="qbr-move-next-steps",
        deck="qbr",
        difficulty="easy",
        category=("Structure",),
        edit_type="Slide/Section Management & Footers",
        instruction="Move the 'Next steps' slide so that it comes right after the agenda.",
        style_target="Slide order: title, Agenda, Next steps, Revenue by region, Quarterly revenue, Product "
        "highlights. Every slide keeps its content; no slide is added or removed.",
        edit=edit_move_next_steps,
        leaves=(
            leaf(
                "Next steps is slide 3",
                "The 'Next steps' slide directly follows the agenda.",
                True,
                checks.check_slide_at,
                title="Next steps",
                position=3,
            ),
            leaf(
                "Other slides keep their order",
                "The remaining slides keep their relative order.",
                False,
                checks.check_order_kept,
                ignore=["Next steps"],
            ),
            leaf(
                "No slide lost or added",
                "Every original slide is present with its text.",
                False,
                checks.check_slides_kept,
                ignore=[],
            ),
        ),
    ),
    DemoTask(
        id="qbr-link-report",
        deck="qbr",
        difficulty="medium",
        category=("Interactivity",),
        edit_type="Hyperlinks & Action Settings",
        instruction=f"On the 'Next steps' slide, turn the words 'full report' into a hyperlink "
        f"to {REPORT_URL}.",
        style_target="Only the words 'full report' in 'Read the full report on the intranet' "
        f"link to {REPORT_URL}; the sentence text is unchanged and no other text is linked.",
        edit=edit_link_report,
        leaves=(
            leaf(
                "Words linked",
                "The words 'full report' carry the hyperlink.",
                True,
                checks.check_hyperlink,
                slide=6,
                text="full report",
                url=REPORT_URL,
            ),
            _text_kept(),
        ),
    ),
    DemoTask(
        id="birds-title-colour",
        deck="birds",
        difficulty="easy",
        category=("Styling",),
        edit_type="Text & Typography",
        instruction=f"Make every slide title dark blue (#{TITLE_BLUE}).",
        style_target=f"All five slide titles, including the title slide, use the colour #{TITLE_BLUE}; "
        "fonts, sizes and wording are unchanged and body text keeps its colour.",
        edit=edit_title_colour,
        leaves=(
            leaf(
                "Titles recoloured",
                f"Every title's text is #{TITLE_BLUE}.",
                True,
                checks.check_titles_coloured,
                colour=TITLE_BLUE,
            ),
            _text_kept(),
        ),
    ),
    DemoTask(
        id="birds-align-pictures",
        deck="birds",
        difficulty="medium",
        category=("Layout",),
        edit_type="Alignment, Distribution & Z-order",
        instruction="On slide 3, align the three bird pictures along their top edges, "
        "lining them up with the highest one.",
        style_target="The gull, tern and plover pictures share one top edge, equal to the gull's "
        "(1.75 in from the top); their sizes, left edges and captions stay where they were.",
        edit=edit_align_pictures,
        leaves=(
            leaf(
                "Tops aligned",
                "The three pictures share a top edge (within 0.5 mm).",
                True,
                checks.check_pictures_aligned,
                slide=3,
                count=3,
                tolerance=HALF_MM,
            ),
            leaf(
                "Aligned to the highest",
                "The shared top edge is the highest picture's.",
                False,
                checks.check_aligned_to_highest,
                slide=3,
                tolerance=HALF_MM,
            ),
            leaf(
                "Sizes kept",
                "The pictures keep their size and horizontal position.",
                False,
                checks.check_pictures_geometry_kept,
                slide=3,
                tolerance=HALF_MM,
            ),
        ),
    ),
    DemoTask(
        id="birds-fade-transitions",
        deck="birds",
        difficulty="easy",
        category=("Interactivity",),
        edit_type="Slide Transitions",
        instruction="Give every slide the same Fade transition that the title slide already has.",
        style_target="All five slides use a Fade transition at medium speed; no animations are added and the "
        "slide content is unchanged.",
        edit=edit_fade_everywhere,
        leaves=(
            leaf(
                "Fade on every slide",
                "Each slide without a Fade now has one.",
                True,
                checks.check_transitions_added,
                kind="fade",
            ),
            _text_kept(),
        ),
    ),
    DemoTask(
        id="onboarding-two-columns",
        deck="onboarding",
        difficulty="hard",
        category=("Layout",),
        edit_type="Slide Layout & Placeholders",
        instruction="Change slide 3 ('What to expect') to the Two Content layout, "
        "with the first three bullets in the left column and the last three in the right column.",
        style_target="Slide 3 uses the 'Two Content' layout: left column 'A buddy for your first month', "
        "'Weekly one-to-ones with your manager', 'Short daily stand-ups'; right column 'Fortnightly "
        "demos', 'Quarterly planning days', 'A learning budget of 1,000 per year'. Title unchanged.",
        edit=edit_two_columns,
        leaves=(
            leaf(
                "Two Content layout",
                "Slide 3 uses the 'Two Content' layout.",
                True,
                checks.check_layout,
                slide=3,
                layout="Two Content",
            ),
            leaf(
                "Bullets split",
                "Bullets 1-3 are in the left column and 4-6 in the right.",
                True,
                checks.check_bullets_split,
                slide=3,
                split=3,
            ),
            node(
                "Rest preserved",
                "Nothing else changes.",
                False,
                [
                    leaf("Title kept", "Slide 3 keeps its title.", False, checks.check_title_kept, slide=3),
                    _unchanged([3]),
                ],
            ),
        ),
    ),
    DemoTask(
        id="onboarding-animate-bullets",
        deck="onboarding",
        difficulty="hard",
        category=("Interactivity",),
        edit_type="Object Animations",
        instruction="On slide 2 ('Your first week'), make the bullet points appear one at a time, "
        "each on its own click, with a Fade entrance effect.",
        style_target="Each of the five paragraphs on slide 2 (sub-bullets included) has its own "
        "Fade entrance triggered on click, in reading order; the text itself is unchanged.",
        edit=edit_animate_bullets,
        leaves=(
            leaf(
                "Every bullet animated",
                "Every paragraph has its own entrance effect.",
                True,
                checks.check_paragraphs_animated,
                slide=2,
                attribute="coverage",
            ),
            leaf(
                "Starts on click",
                "Each paragraph effect starts on a click.",
                False,
                checks.check_paragraphs_animated,
                slide=2,
                attribute="on_click",
            ),
            leaf(
                "Fade effect",
                "The entrance effects are fades.",
                False,
                checks.check_paragraphs_animated,
                slide=2,
                attribute="fade",
            ),
            _unchanged([]),
        ),
    ),
    DemoTask(
        id="onboarding-table-header",
        deck="onboarding",
        difficulty="medium",
        category=("Styling",),
        edit_type="Tables",
        instruction="Style the header row of the contacts table on slide 5 "
        f"with a dark teal fill (#{HEADER_TEAL}) and bold white text.",
        style_target="The three header cells (Team, Contact, Channel) have a solid "
        f"#{HEADER_TEAL} fill and bold #FFFFFF text; body rows keep the table style's banding; "
        "no cell text changes.",
        edit=edit_table_header,
        leaves=(
            node(
                "Header styled",
                "The header row has the requested fill and text.",
                True,
                [
                    leaf(
                        "Teal fill",
                        f"Header cells are filled with #{HEADER_TEAL}.",
                        True,
                        checks.check_header_fill,
                        slide=5,
                        colour=HEADER_TEAL,
                    ),
                    leaf(
                        "Bold white text",
                        "Header text is bold and white.",
                        True,
                        checks.check_header_text,
                        slide=5,
                        colour=WHITE,
                    ),
                ],
            ),
            leaf(
                "Cell text kept",
                "No table cell changes its text.",
                False,
                checks.check_table_text_kept,
                slide=5,
            ),
            _unchanged([5]),
        ),
    ),
    DemoTask(
        id="onboarding-reference-section",
        deck="onboarding",
        difficulty="medium",
        category=("Structure",),
        edit_type="Slide/Section Management & Footers",
        instruction="Insert a section header slide titled 'Reference' "
        "just before the 'Useful contacts' slide.",
        style_target="A new slide using the 'Section Header' layout, titled 'Reference' "
        "(subtitle optional), sits between 'Where your time goes' and 'Useful contacts'; "
        "the deck has six slides and the others are unchanged.",
        edit=edit_reference_section,
        leaves=(
            leaf(
                "Section slide inserted",
                "A 'Reference' Section Header slide precedes 'Useful contacts'.",
                True,
                checks.check_section_slide,
                title="Reference",
                before_title="Useful contacts",
                layout="Section Header",
            ),
            leaf(
                "Original slides kept",
                "The original slides are all present, in order.",
                False,
                checks.check_order_kept,
                ignore=["Reference"],
            ),
            leaf(
                "No other slides added",
                "Only the section slide is new.",
                False,
                checks.check_slides_kept,
                ignore=["Reference"],
            ),
        ),
    ),
)
