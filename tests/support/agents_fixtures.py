"""Helpers for the agent tests: a small deck, a fake renderer, a scripted-backend workspace."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from pptarena.models import ModelHub
from pptarena.types import AgentLog, ComponentContext, SlideImage, Task, Workspace

TARGET_TEXT = "ZEBRA-TARGET-7731"
STYLE_TARGET = "STYLE-SECRET-4410 use teal headings"


def make_deck(path: Path) -> Path:
    """Two slides: a title slide and an agenda with a typo ("Revnue")."""
    from pptx import Presentation

    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[0])
    s1.shapes.title.text = "Quarterly Review"
    s1.placeholders[1].text = "Finance team"
    s2 = prs.slides.add_slide(prs.slide_layouts[1])
    s2.shapes.title.text = "Agenda"
    body = s2.placeholders[1].text_frame
    body.text = "Revnue growth"
    body.add_paragraph().text = "Hiring plan"
    prs.save(str(path))
    return path


def make_target(path: Path) -> Path:
    """A 'reference target' whose unique text no agent may ever see."""
    from pptx import Presentation

    make_deck(path)
    prs = Presentation(str(path))
    prs.slides[1].placeholders[1].text_frame.paragraphs[0].runs[0].text = TARGET_TEXT
    prs.save(str(path))
    return path


def deck_texts(path: Path) -> list[str]:
    """Every paragraph text of the deck, slide by slide."""
    from pptx import Presentation

    out = []
    for slide in Presentation(str(path)).slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                out += [p.text for p in shape.text_frame.paragraphs]
    return out


class FakeRenderer:
    """One small PNG per slide (colour from the slide's text), counting its calls."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[Path] = []
        self.fail_on = fail_on

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        from PIL import Image

        from pptarena.deck import slide_ids

        self.calls.append(Path(deck_path))
        if self.fail_on and self.fail_on in Path(deck_path).name:
            raise RuntimeError("fake renderer crash")
        out_dir.mkdir(parents=True, exist_ok=True)
        images = []
        for number, sld_id, hidden in slide_ids(deck_path):
            p = out_dir / f"slide-{number}.png"
            Image.new("RGB", (160, 120), (number * 40 % 256, 90, 160)).save(p)
            images.append(SlideImage(number, sld_id, p, 160, 120, hidden))
        return images


def scripted_workspace(tmp: Path, responses: list[Any], *, renderer: Any = None, deck: Path | None = None):
    """(workspace, backend): the input deck copied in, models from a scripted backend named ``scripted``."""
    from pptarena.plugins.backends.scripted import ScriptedBackend, ScriptedOptions

    backend = ScriptedBackend(
        ScriptedOptions(responses=responses), ComponentContext(cache_dir=tmp, model=None)
    )  # type: ignore[arg-type]
    hub = ModelHub({"scripted": backend})
    task_dir = tmp / "task"
    (task_dir / "input").mkdir(parents=True)
    source = deck or make_deck(tmp / "deck.pptx")
    input_deck = task_dir / "input" / "deck.pptx"
    input_deck.write_bytes(Path(source).read_bytes())
    ws = Workspace(
        dir=task_dir,
        input_deck=input_deck,
        output_deck=task_dir / "prediction.pptx",
        renderer=renderer,
        model=hub.factory(),
        log=AgentLog(task_dir / "agent.log.jsonl"),
        timeout=300,
    )
    return ws, backend


def make_task(tmp: Path, instruction: str = "Fix the typo 'Revnue' on slide 2.") -> Task:
    """A task with a target deck and a style target (which agents must never see)."""
    return Task(
        id="demo-001",
        instruction=instruction,
        original=tmp / "deck.pptx",
        target=make_target(tmp / "target.pptx"),
        style_target=STYLE_TARGET,
    )


def build_agent(name: str, tmp: Path, **options: Any):
    """An agent from the registry with the given options."""
    from pptarena.run.configuration.registry import get_registry

    reg = get_registry()
    ctx = ComponentContext(cache_dir=tmp, model=None, name=name, label=name)  # type: ignore[arg-type]
    return reg.create("agents", name, {"model": "scripted/m", **options}, ctx)


def events(ws: Workspace, name: str | None = None) -> list[dict[str, Any]]:
    """The agent log's events (of one kind)."""
    return [e for e in ws.log.events if name is None or e["event"] == name]


FIX_TYPO_PROGRAM = textwrap.dedent(
    """\
    Here is the program.

    ```python
    from pptx import Presentation
    prs = Presentation(INPUT_PATH)
    for shape in prs.slides[1].shapes:
        if shape.has_text_frame:
            for p in shape.text_frame.paragraphs:
                for r in p.runs:
                    r.text = r.text.replace("Revnue", "Revenue")
    prs.save(OUTPUT_PATH)
    ```
    """
)

BROKEN_PROGRAM = (
    "```python\nfrom pptx import Presentation\nprs = Presentation(INPUT_PATH)\n"
    "prs.slides[7].shapes.title.text = 'x'\nprs.save(OUTPUT_PATH)\n```"
)


def all_prompt_text(backend: Any) -> str:
    """Every text part of every request the scripted backend received."""
    return "\n".join(p for r in backend.requests for m in r.messages for p in m.parts() if isinstance(p, str))


# A python-pptx program that fixes the demo task qbr-fix-typos (two misspelt words on slide 2).
FIX_QBR_TYPOS = """```python
from pptx import Presentation
prs = Presentation(INPUT_PATH)
fixes = {"Quartely": "Quarterly", "performence": "performance"}
for shape in prs.slides[1].shapes:
    if shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            for run in paragraph.runs:
                for wrong, right in fixes.items():
                    run.text = run.text.replace(wrong, right)
prs.save(OUTPUT_PATH)
```"""
