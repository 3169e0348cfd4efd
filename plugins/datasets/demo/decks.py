"""The three original decks of the demo set, built with python-pptx (4:3, default theme).

* ``qbr.pptx`` — a quarterly business review: title, two-level agenda (with two typos), a
  regional revenue table, a column chart, product pictures with a Fade animation, next steps.
* ``birds.pptx`` — a volunteer field guide: title with a Fade transition, bullets, three
  slightly misaligned pictures, a Two Content comparison, a checklist.
* ``onboarding.pptx`` — a new-starter deck: title with a logo, two-level bullets, a six-item
  list, a pie chart, a contacts table.

Every slide has speaker notes. Builders are deterministic: the same code gives the same decks.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path

from pptarena.plugins.datasets.demo import media as demo_media
from pptarena.plugins.datasets.demo.deck_xml import save_reproducibly, set_fade_entrance, set_transition

Bullet = str | tuple[str, int]

# default-template layout indices
TITLE_SLIDE, TITLE_AND_CONTENT, SECTION_HEADER, TWO_CONTENT, TITLE_ONLY = 0, 1, 2, 3, 5


def _rgb(hex_value: str):
    from pptx.dml.color import RGBColor

    return RGBColor.from_string(hex_value)


def _notes(slide, text: str) -> None:
    slide.notes_slide.notes_text_frame.text = text


def _fill_bullets(text_frame, bullets: Sequence[Bullet]) -> None:
    text_frame.clear()
    for i, item in enumerate(bullets):
        text, level = (item, 0) if isinstance(item, str) else item
        paragraph = text_frame.paragraphs[0] if i == 0 else text_frame.add_paragraph()
        paragraph.text = text
        paragraph.level = level


def _accent_bar(slide, colour: str) -> None:
    from pptx.enum.shapes import MSO_SHAPE
    from pptx.util import Inches

    bar = slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, Inches(4.4), Inches(1.45), Inches(1.2), Inches(0.07))
    bar.name = "Accent bar"
    bar.fill.solid()
    bar.fill.fore_color.rgb = _rgb(colour)
    bar.line.fill.background()


def _title_slide(prs, title: str, subtitle: str, background: str | None, text_colour: str | None):
    slide = prs.slides.add_slide(prs.slide_layouts[TITLE_SLIDE])
    slide.shapes.title.text = title
    slide.placeholders[1].text = subtitle
    if background:
        slide.background.fill.solid()
        slide.background.fill.fore_color.rgb = _rgb(background)
    if text_colour:
        for shape in (slide.shapes.title, slide.placeholders[1]):
            for paragraph in shape.text_frame.paragraphs:
                for run in paragraph.runs:
                    run.font.color.rgb = _rgb(text_colour)
    return slide


def _bullet_slide(prs, title: str, bullets: Sequence[Bullet], accent: str):
    slide = prs.slides.add_slide(prs.slide_layouts[TITLE_AND_CONTENT])
    slide.shapes.title.text = title
    _fill_bullets(slide.placeholders[1].text_frame, bullets)
    _accent_bar(slide, accent)
    return slide


def _title_only(prs, title: str, accent: str):
    slide = prs.slides.add_slide(prs.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = title
    _accent_bar(slide, accent)
    return slide


def _picture(slide, png: bytes, left: float, top: float, width: float, name: str):
    from pptx.util import Inches

    picture = slide.shapes.add_picture(io.BytesIO(png), Inches(left), Inches(top), width=Inches(width))
    picture.name = f"Picture: {name}"
    picture._element.nvPicPr.cNvPr.set("descr", name)
    return picture


def _caption(slide, text: str, left: float, top: float, width: float) -> None:
    from pptx.enum.text import PP_ALIGN
    from pptx.util import Inches, Pt

    box = slide.shapes.add_textbox(Inches(left), Inches(top), Inches(width), Inches(0.4))
    box.name = f"Caption: {text}"
    paragraph = box.text_frame.paragraphs[0]
    paragraph.text = text
    paragraph.alignment = PP_ALIGN.CENTER
    paragraph.runs[0].font.size = Pt(16)


def _table(slide, rows: Sequence[Sequence[str]], left: float, top: float, width: float, row_height: float):
    from pptx.util import Inches, Pt

    frame = slide.shapes.add_table(
        len(rows), len(rows[0]), Inches(left), Inches(top), Inches(width), Inches(row_height * len(rows))
    )
    frame.name = "Table"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            cell = frame.table.cell(r, c)
            cell.text = value
            cell.text_frame.paragraphs[0].runs[0].font.size = Pt(18)
    return frame


# --------------------------------------------------------------------------- qbr


def build_qbr(path: Path) -> None:
    """The quarterly business review deck (6 slides)."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE, XL_LEGEND_POSITION
    from pptx.util import Inches, Pt

    accent = "C0504D"
    prs = Presentation()
    slide = _title_slide(
        prs, "Q3 2024 Business Review", "Northwind Outfitters · Leadership team briefing", "1F2A44", "FFFFFF"
    )
    set_transition(slide, "fade")
    _notes(slide, "Welcome. This review covers July to September and the plan for the last quarter.")

    slide = _bullet_slide(
        prs,
        "Agenda",
        [
            "Quartely results at a glance",
            ("Revenue, margin and cash", 1),
            ("Regional performence", 1),
            "Product highlights",
            ("Trailhead backpack launch", 1),
            "Risks and next steps",
        ],
        accent,
    )
    _notes(slide, "Keep the agenda short: about thirty minutes of content and time for questions.")

    slide = _title_only(prs, "Revenue by region ($M)", accent)
    _table(
        slide,
        [
            ["Region", "Q1", "Q2", "Q3", "YoY"],
            ["North", "1.2", "1.4", "1.6", "+12%"],
            ["South", "0.8", "0.9", "1.1", "+9%"],
            ["East", "0.6", "0.7", "0.8", "+15%"],
            ["West", "0.5", "0.6", "0.7", "+18%"],
        ],
        0.7,
        1.9,
        8.6,
        0.55,
    )
    _notes(slide, "West is the smallest region but grows fastest; North carries the quarter.")

    slide = _title_only(prs, "Quarterly revenue ($M)", accent)
    data = CategoryChartData()
    data.categories = ["Q1", "Q2", "Q3"]
    data.add_series("Actual", (3.1, 3.6, 4.2))
    chart = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(0.9), Inches(1.8), Inches(8.2), Inches(5.0), data
    ).chart
    chart.has_title = False
    chart.has_legend = True
    chart.legend.position = XL_LEGEND_POSITION.RIGHT
    chart.legend.include_in_layout = False
    chart.font.size = Pt(16)
    _notes(slide, "Revenue grew every quarter; Q3 was a record at 4.2 million.")

    slide = _title_only(prs, "Product highlights", accent)
    for i, (kind, colour, name) in enumerate(
        [
            ("backpack", (46, 117, 182), "Trailhead backpack"),
            ("tent", (112, 173, 71), "Ridge two-person tent"),
            ("boots", (153, 102, 51), "Summit hiking boots"),
        ]
    ):
        left = 0.6 + i * 3.05
        picture = _picture(slide, demo_media.product_picture(colour, kind), left, 2.0, 2.75, name)
        _caption(slide, name, left, 4.2, 2.75)
        if i == 0:
            set_fade_entrance(slide, picture.shape_id)
    _notes(slide, "The backpack sold out twice; the tent and boots launch in the spring catalogue.")

    slide = _bullet_slide(
        prs,
        "Next steps",
        [
            "Expand the Trailhead line to two new regions",
            "Hire two account managers for the West",
            "Read the full report on the intranet",
        ],
        accent,
    )
    _notes(slide, "Owners and dates for each step are in the full report.")
    save_reproducibly(prs, path)


# --------------------------------------------------------------------------- birds

BIRD_TOPS = (1.75, 2.05, 1.9)  # inches: deliberately not aligned (the layout task fixes it)


def build_birds(path: Path) -> None:
    """The coastal-birds field guide deck (5 slides)."""
    from pptx import Presentation

    accent = "4F81BD"
    prs = Presentation()
    slide = _title_slide(
        prs, "A Field Guide to Coastal Birds", "Spring survey briefing · Volunteer edition", "F4ECDC", None
    )
    set_transition(slide, "fade")
    _notes(slide, "Thank everyone for volunteering. The survey runs on the first two Saturdays of May.")

    slide = _bullet_slide(
        prs,
        "Why we count shorebirds",
        [
            "Counts show how populations change",
            ("Numbers are compared with the last ten springs", 1),
            "Beaches change every season",
            ("Storms move nesting sites", 1),
            ("New paths disturb birds", 1),
            "Your records guide protection work",
        ],
        accent,
    )
    _notes(slide, "Mention the beach closure last year that came straight from volunteer counts.")

    slide = _title_only(prs, "Three birds to know", accent)
    birds = [
        ("Herring gull", demo_media.bird_picture((236, 236, 236), (150, 160, 170), (240, 200, 40))),
        ("Common tern", demo_media.bird_picture((245, 245, 245), (190, 200, 210), (220, 60, 40), crest=True)),
        (
            "Ringed plover",
            demo_media.bird_picture((214, 184, 140), (150, 120, 90), (240, 150, 40), long_legs=True),
        ),
    ]
    for i, ((name, png), top) in enumerate(zip(birds, BIRD_TOPS, strict=True)):
        left = 0.6 + i * 3.05
        _picture(slide, png, left, top, 2.75, name)
        _caption(slide, name, left, 4.35, 2.75)
    _notes(slide, "Gulls are the most common; plovers are the ones we most need to protect.")

    slide = prs.slides.add_slide(prs.slide_layouts[TWO_CONTENT])
    slide.shapes.title.text = "Gull or tern?"
    _fill_bullets(
        slide.placeholders[1].text_frame,
        ["Gulls", ("Heavy body, broad wings", 1), ("Walk and scavenge on the beach", 1)],
    )
    _fill_bullets(
        slide.placeholders[2].text_frame,
        ["Terns", ("Slim body, forked tail", 1), ("Dive into the water for fish", 1)],
    )
    _accent_bar(slide, accent)
    _notes(slide, "If it dives head first into the sea, it is a tern.")

    slide = _bullet_slide(
        prs,
        "Survey day checklist",
        [
            "Binoculars and the tally sheet",
            "Meet at the north car park at 7:30",
            "Count for exactly thirty minutes",
            "Send your sheet to the coordinator",
        ],
        accent,
    )
    _notes(slide, "Sheets can also be photographed and emailed.")
    save_reproducibly(prs, path)


# --------------------------------------------------------------------------- onboarding

FIRST_WEEK: list[Bullet] = [
    "Day one: laptop, accounts and a building tour",
    ("Bring photo ID for your badge", 1),
    "Meet your onboarding buddy",
    "Pair on a small bug fix",
    ("Your first pull request by Friday", 1),
]
WHAT_TO_EXPECT = [
    "A buddy for your first month",
    "Weekly one-to-ones with your manager",
    "Short daily stand-ups",
    "Fortnightly demos",
    "Quarterly planning days",
    "A learning budget of 1,000 per year",
]


def build_onboarding(path: Path) -> None:
    """The new-starter onboarding deck (5 slides)."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE, XL_LEGEND_POSITION
    from pptx.util import Inches, Pt

    accent = "00798C"
    prs = Presentation()
    slide = _title_slide(
        prs, "Welcome to Lumen Labs", "New starter onboarding · Engineering", "00798C", "FFFFFF"
    )
    _picture(slide, demo_media.logo_picture(), 4.35, 0.45, 1.3, "Lumen Labs logo")
    _notes(slide, "Introduce yourself and the onboarding team before starting.")

    slide = _bullet_slide(prs, "Your first week", FIRST_WEEK, accent)
    _notes(slide, "Walk through the week day by day; the buddy introduction matters most.")

    slide = _bullet_slide(prs, "What to expect", WHAT_TO_EXPECT, accent)
    _notes(slide, "These rituals are the same in every engineering team.")

    slide = _title_only(prs, "Where your time goes", accent)
    data = CategoryChartData()
    data.categories = ["Pairing", "Onboarding sessions", "Own project", "Admin"]
    data.add_series("Share of first month", (0.4, 0.3, 0.2, 0.1))
    chart = slide.shapes.add_chart(
        XL_CHART_TYPE.PIE, Inches(1.5), Inches(1.8), Inches(7.0), Inches(5.0), data
    ).chart
    chart.has_legend = True
    chart.legend.position = XL_LEGEND_POSITION.RIGHT
    chart.legend.include_in_layout = False
    chart.font.size = Pt(14)
    plot = chart.plots[0]
    plot.has_data_labels = True
    plot.data_labels.number_format = "0%"
    plot.data_labels.number_format_is_linked = False
    _notes(slide, "Most of the first month is spent pairing with your team.")

    slide = _title_only(prs, "Useful contacts", accent)
    _table(
        slide,
        [
            ["Team", "Contact", "Channel"],
            ["IT help desk", "Priya Shah", "#it-help"],
            ["People team", "Tom Okafor", "#people"],
            ["Facilities", "Ana Costa", "#office"],
        ],
        0.9,
        2.0,
        8.2,
        0.6,
    )
    _notes(slide, "Everyone on this list is happy to be messaged directly.")
    save_reproducibly(prs, path)


DECK_BUILDERS: dict[str, Callable[[Path], None]] = {
    "qbr": build_qbr,
    "birds": build_birds,
    "onboarding": build_onboarding,
}
