"""The powerpoint renderer with a fake COM layer that records the exact calls (PowerPoint cannot run here)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from PIL import Image

from pptarena.plugins.renderers.powerpoint import PowerPointRenderer
from pptarena.types import ComponentContext, ComponentUnavailable, InfraError


def make_deck(path: Path, slides: int = 3, hidden: tuple[int, ...] = (2,)) -> Path:
    """A real 4:3 deck written by python-pptx, with some slides hidden (show="0")."""
    from pptx import Presentation

    prs = Presentation()
    for n in range(1, slides + 1):
        s = prs.slides.add_slide(prs.slide_layouts[5])
        s.shapes.title.text = f"Slide {n}"
        if n in hidden:
            s._element.set("show", "0")
    prs.save(str(path))
    return path


class FakeSlide:
    def __init__(self, com: FakeCom, index: int):
        self.com, self.index = com, index

    def Export(self, path, fmt, width, height):  # noqa: N802 - COM name
        self.com.calls.append(("Slide.Export", self.index, path, fmt, width, height))
        if self.index == self.com.fail_on_slide:
            raise RuntimeError("COM error 0x80004005")
        if self.index == self.com.hang_on_slide:
            self.com.killed.wait(30)
            raise RuntimeError("RPC server unavailable")
        w, h = (width + self.com.export_off_by, height)
        Image.new("RGB", (w, h), "navy").save(path, "PNG")


class FakeSlides:
    def __init__(self, com: FakeCom):
        self.com = com

    @property
    def Count(self):  # noqa: N802
        self.com.calls.append(("Slides.Count",))
        return self.com.slide_count

    def Item(self, index):  # noqa: N802
        return FakeSlide(self.com, index)


class FakePageSetup:
    SlideWidth = 720.0
    SlideHeight = 540.0


class FakePresentation:
    def __init__(self, com: FakeCom):
        object.__setattr__(self, "com", com)
        object.__setattr__(self, "PageSetup", FakePageSetup())
        object.__setattr__(self, "Slides", FakeSlides(com))

    def __setattr__(self, name, value):
        self.com.calls.append((f"Presentation.{name}=", value))

    def Close(self):  # noqa: N802
        self.com.calls.append(("Presentation.Close",))
        self.com.open_count -= 1


class FakePresentations:
    def __init__(self, com: FakeCom):
        self.com = com

    def Open(self, *args):  # noqa: N802
        self.com.calls.append(("Presentations.Open", *args))
        self.com.open_count += 1
        return FakePresentation(self.com)

    @property
    def Count(self):  # noqa: N802
        self.com.calls.append(("Presentations.Count",))
        return self.com.open_count


class FakeApp:
    HWND = 4242

    def __init__(self, com: FakeCom):
        object.__setattr__(self, "com", com)
        object.__setattr__(self, "Presentations", FakePresentations(com))

    def __setattr__(self, name, value):
        self.com.calls.append((f"Application.{name}=", value))

    def Quit(self):  # noqa: N802
        self.com.calls.append(("Application.Quit",))


class FakeCom:
    """Implements the renderer's ComApi and records every call in order."""

    def __init__(self, slide_count=3, fail_on_slide=None, hang_on_slide=None, other_open=0, export_off_by=0):
        self.calls: list[tuple] = []
        self.slide_count = slide_count
        self.fail_on_slide = fail_on_slide
        self.hang_on_slide = hang_on_slide
        self.open_count = other_open
        self.export_off_by = export_off_by
        self.killed = threading.Event()

    def co_initialize(self):
        self.calls.append(("CoInitialize",))

    def co_uninitialize(self):
        self.calls.append(("CoUninitialize",))

    def dispatch(self, prog_id):
        self.calls.append(("Dispatch", prog_id))
        return FakeApp(self)

    def process_id(self, app):
        return 9999 if app.HWND == 4242 else None

    def kill(self, pid):
        self.calls.append(("kill", pid))
        self.killed.set()


def renderer(tmp: Path, com: FakeCom, **options) -> PowerPointRenderer:
    opts = PowerPointRenderer.Options(**{"cache": False, **options})
    return PowerPointRenderer(
        opts, ComponentContext(cache_dir=tmp / "cache", model=lambda ref: None), com=com
    )


def test_exports_every_slide_including_hidden_with_exact_calls(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    com = FakeCom()
    out = tmp_path / "out"
    images = renderer(tmp_path, com).render(deck, out)
    assert [(i.number, i.hidden, i.width, i.height) for i in images] == [
        (1, False, 1280, 960),
        (2, True, 1280, 960),
        (3, False, 1280, 960),
    ]
    assert [i.sld_id for i in images] == [256, 257, 258]
    assert com.calls == [
        ("CoInitialize",),
        ("Dispatch", "PowerPoint.Application"),
        ("Application.DisplayAlerts=", 1),
        ("Presentations.Open", str(deck.resolve()), -1, 0, 0),  # ReadOnly, not Untitled, WithWindow=False
        ("Slides.Count",),
        ("Slide.Export", 1, str(out / "slide-001.png"), "PNG", 1280, 960),
        ("Slide.Export", 2, str(out / "slide-002.png"), "PNG", 1280, 960),
        ("Slide.Export", 3, str(out / "slide-003.png"), "PNG", 1280, 960),
        ("Presentation.Saved=", -1),
        ("Presentation.Close",),
        ("Presentations.Count",),
        ("Application.Quit",),
        ("CoUninitialize",),
    ]


def test_error_mid_export_still_closes_and_quits(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    com = FakeCom(fail_on_slide=2)
    with pytest.raises(InfraError, match="PowerPoint failed rendering deck.pptx: COM error"):
        renderer(tmp_path, com).render(deck, tmp_path / "out")
    assert com.calls[-5:] == [
        ("Presentation.Saved=", -1),
        ("Presentation.Close",),
        ("Presentations.Count",),
        ("Application.Quit",),
        ("CoUninitialize",),
    ]


def test_slide_count_mismatch_and_size_fix(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    with pytest.raises(InfraError, match="sees 2 slide"):
        renderer(tmp_path, FakeCom(slide_count=2)).render(deck, tmp_path / "a")
    images = renderer(tmp_path, FakeCom(export_off_by=1), size=640).render(deck, tmp_path / "b")
    for img in images:
        with Image.open(img.path) as im:
            assert im.size == (640, 480) == (img.width, img.height)


def test_users_other_presentations_keep_powerpoint_running(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx", slides=1, hidden=())
    com = FakeCom(slide_count=1, other_open=1)
    renderer(tmp_path, com).render(deck, tmp_path / "out")
    assert ("Application.Quit",) not in com.calls
    assert com.calls[-1] == ("CoUninitialize",)


def test_hung_powerpoint_is_killed_and_reported_as_infra_error(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    com = FakeCom(hang_on_slide=1)
    with pytest.raises(InfraError, match="timed out after 0.5s"):
        renderer(tmp_path, com, timeout=0.5).render(deck, tmp_path / "out")
    assert ("kill", 9999) in com.calls
    assert ("Application.Quit",) in com.calls and com.calls[-1] == ("CoUninitialize",)


@pytest.mark.skipif(sys.platform == "win32", reason="checks the non-Windows message")
def test_needs_windows_elsewhere(tmp_path):
    opts = PowerPointRenderer.Options()
    with pytest.raises(ComponentUnavailable, match="needs Windows with PowerPoint installed"):
        PowerPointRenderer(opts, ComponentContext(cache_dir=tmp_path, model=lambda ref: None))


def test_registered_under_its_name():
    from pptarena.run.configuration.registry import get_registry

    spec = get_registry().get("renderers", "powerpoint")
    assert spec.factory is PowerPointRenderer
