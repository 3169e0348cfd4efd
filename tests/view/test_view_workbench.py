"""The labelling workbench as a person uses it all day: Playwright driving the system Chromium (never a
downloaded one) against a real ``arena view`` process (issue 34, item 4).

The save status stays on screen while the slides are scrolled; a slide opens at full resolution
(click, Enter on it, or ``z``) and Escape closes it; a pairwise item shows the two predictions side
by side with one original and one target, and the pairwise keys; every scale can be changed by key
after both are answered, ``y`` / ``n`` are never swallowed by the slide-number field, a text field
keeps its text; a finished queue says so; paging past the end is clamped. The slides are PNG files
of 1600 × 900 px put where the run keeps its renders (no LibreOffice needed). A failing test leaves a
screenshot in its ``tmp_path``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) is not installed")
from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.store import Campaign  # noqa: E402
from pptarena.render import slide_file_name  # noqa: E402
from pptarena.run.folder.rundir import RENDERS, RunDir  # noqa: E402
from pptarena.view.runs import run_id  # noqa: E402
from tests.support.chromium import CHROMIUM  # noqa: E402
from tests.support.view_fixtures import serve, small_run, stop  # noqa: E402

pytestmark = pytest.mark.slow

AGENTS = ("oracle", "noop")
WIDTH, HEIGHT = 1600, 900  # the renders' full resolution

if not Path(CHROMIUM).is_file():
    pytest.skip(f"no system Chromium at {CHROMIUM} (scripts/setup.sh installs it)", allow_module_level=True)


def _fake_renders(run: Path, tasks: int) -> None:
    """A 1600 × 900 render of slide 1 of every role of every attempt, where the view looks first."""
    from PIL import Image, ImageDraw

    colours = {"original": (230, 230, 250), "prediction": (250, 235, 215), "target": (220, 245, 220)}
    for agent in AGENTS:
        for i in range(tasks):
            folder = RunDir(run).attempt(agent, f"task-{i}")
            for role, colour in colours.items():
                out = folder / RENDERS / role
                out.mkdir(parents=True, exist_ok=True)
                img = Image.new("RGB", (WIDTH, HEIGHT), colour)
                ImageDraw.Draw(img).text((40, 40), f"{role} task-{i}", fill=(0, 0, 0))
                img.save(out / slide_file_name(1))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp("view-workbench")
    run = small_run(base, count=5)  # 10 attempts, 5 pairs
    _fake_renders(run, 5)
    made = {}
    for name, protocol, who, sample in (
        ("wb-abs", "absolute", "dora", None),
        ("wb-pair", "pairwise", "frank", None),
        ("wb-done", "absolute", "gina", 2),
    ):
        campaign, tokens = new_campaign(
            [run], protocol=protocol, annotators=[who], overlap=1.0, sample=sample, seed=5, name=name
        )
        made[who] = (campaign.path, tokens[who])
    proc, url, _ = serve([run])  # finds the campaigns in run/campaigns/
    yield {"run": run, "url": url, "campaigns": made}
    stop(proc)


@contextlib.contextmanager
def annotator(site, browser, who: str, tmp_path: Path, height: int = 650):
    """A fresh browser context logged in as ``who`` (their link opened); a screenshot on failure."""
    ctx = browser.new_context(viewport={"width": 1280, "height": height})
    page = ctx.new_page()
    try:
        page.goto(f"{site['url']}/login?token={site['campaigns'][who][1]}")
        page.wait_for_selector("#label-form")
        yield page
    except BaseException:
        with contextlib.suppress(Exception):
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            print(f"screenshot: {tmp_path / 'failure.png'}")
        raise
    finally:
        ctx.close()


def _in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }""",
        selector,
    )


def _checked(page, name: str) -> str | None:
    return page.evaluate(
        '(n) => { const c = document.querySelector(`input[name="${n}"]:checked`);'
        " return c ? c.value : null; }",
        name,
    )


def _focused(page) -> str:
    return page.evaluate(
        "() => { const a = document.activeElement;"
        " return a ? a.tagName.toLowerCase() + ':' + (a.name || a.id || '') : ''; }"
    )


def test_save_status_stays_on_screen_while_scrolling(site, browser, tmp_path):
    with annotator(site, browser, "dora", tmp_path, height=600) as page:
        page.wait_for_selector(".slides img")
        assert page.evaluate("document.documentElement.scrollHeight") > 1000  # a page that scrolls
        page.keyboard.press("Enter")  # nothing answered: not saved, and the page says so where one looks
        assert "not saved" in page.inner_text("#save-status")
        for y in (0, 700, 100_000):  # top, the middle, the bottom of the page
            page.evaluate(f"window.scrollTo(0, {y})")
            page.wait_for_timeout(50)
            assert _in_viewport(page, "#save-status"), y
            assert _in_viewport(page, "#progress"), y
        page.keyboard.press("3")
        assert "instruction following: 3" in page.inner_text("#answers")  # the answers so far, on screen


def test_slide_zoom_full_resolution_keyboard_and_escape(site, browser, tmp_path):
    with annotator(site, browser, "dora", tmp_path) as page:
        thumb = page.locator(".slides img").first
        thumb.wait_for()
        small = thumb.bounding_box()
        assert small["width"] < WIDTH / 2  # shown small on the page
        thumb.click()
        page.wait_for_selector("#zoom[data-ready='1']")
        assert page.is_visible("#zoom")
        got = page.evaluate(
            """() => { const i = document.getElementById('zoom-img');
            return [i.naturalWidth, i.naturalHeight, Math.round(i.getBoundingClientRect().width), i.src]; }"""
        )
        assert got[:3] == [WIDTH, HEIGHT, WIDTH]  # the render itself, at full resolution
        assert got[3] == thumb.evaluate("t => t.src")
        page.keyboard.press("3")  # keys belong to the zoom while it is open: no scale answered
        assert _checked(page, "if") is None
        url = page.url
        page.keyboard.press("ArrowRight")  # pans instead of going to the next item
        page.wait_for_timeout(200)
        assert page.evaluate("document.getElementById('zoom-pane').scrollLeft") > 0
        assert page.url == url
        page.keyboard.press("+")
        assert float(page.get_attribute("#zoom", "data-scale")) > 1
        page.keyboard.press("f")  # fit in the window
        assert float(page.get_attribute("#zoom", "data-scale")) < 1
        page.keyboard.press("Escape")
        assert not page.is_visible("#zoom")
        assert page.evaluate("document.activeElement === document.querySelector('.slides img')")
        page.keyboard.press("Enter")  # the focused slide: Enter opens it again
        page.wait_for_selector("#zoom[data-ready='1']")
        page.keyboard.press("Escape")
        assert not page.is_visible("#zoom")
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("z")  # from anywhere: the first slide
        page.wait_for_selector("#zoom[data-ready='1']")
        page.keyboard.press("Escape")
        assert not page.is_visible("#zoom")


def test_every_scale_by_key_after_answering_and_y_n_never_swallowed(site, browser, tmp_path):
    path, _ = site["campaigns"]["dora"]
    before = len(Campaign.open(path).history("dora"))
    with annotator(site, browser, "dora", tmp_path) as page:
        page.keyboard.press("3")
        page.keyboard.press("4")
        assert (_checked(page, "if"), _checked(page, "vq")) == ("3", "4")
        page.keyboard.press("i")  # back to instruction following
        page.keyboard.press("1")
        assert (_checked(page, "if"), _checked(page, "vq")) == ("1", "4")
        page.keyboard.press("v")
        page.keyboard.press("0")
        assert (_checked(page, "if"), _checked(page, "vq")) == ("1", "0")
        page.keyboard.press("2")  # the active scale stays visual quality
        assert (_checked(page, "if"), _checked(page, "vq")) == ("1", "2")
        assert page.get_attribute("body", "data-active-scale") == "vq"
        # Tab into a scale makes it the active one: from the radio of instruction following, Tab
        # leaves the group for the next scale (visual quality), Shift+Tab comes back
        page.focus("input[name=if]:checked")
        assert page.get_attribute("body", "data-active-scale") == "if"
        page.keyboard.press("4")
        assert (_checked(page, "if"), _checked(page, "vq")) == ("4", "2")
        page.keyboard.press("Tab")
        assert _focused(page) == "input:vq" and page.get_attribute("body", "data-active-scale") == "vq"
        page.keyboard.press("3")
        assert (_checked(page, "if"), _checked(page, "vq")) == ("4", "3")
        # y, then n: the slide-number field does not swallow n
        page.keyboard.press("y")
        assert _checked(page, "damage") == "yes" and _focused(page) == "input:damage_slide"
        page.keyboard.press("n")
        assert _checked(page, "damage") == "no" and _focused(page) != "input:damage_slide"
        # a text field keeps its text: y, n and digits typed in the comment are text
        page.click("textarea[name=comment]")
        page.keyboard.type("yes 2 no")
        assert page.input_value("textarea[name=comment]") == "yes 2 no"
        assert (_checked(page, "if"), _checked(page, "vq"), _checked(page, "damage")) == ("4", "3", "no")
        page.keyboard.press("Escape")  # leaves the field: keys are keys again
        assert _focused(page) != "textarea:comment"
        page.keyboard.press("y")
        page.keyboard.type("2")  # the damaged slide
        assert page.input_value("input[name=damage_slide]") == "2"
        assert (_checked(page, "if"), _checked(page, "vq")) == ("4", "3")
        with page.expect_navigation():
            page.keyboard.press("Enter")
    versions = Campaign.open(path).history("dora")
    assert len(versions) == before + 1
    want = {"if": 4, "vq": 3, "damage": "yes", "damage_slide": 2, "comment": "yes 2 no"}
    assert versions[-1].fields == want


def test_pairwise_side_by_side_with_its_own_help(site, browser, tmp_path):
    with annotator(site, browser, "frank", tmp_path, height=900) as page:
        page.wait_for_selector("#pair-grid img")
        left = page.locator("#pair-grid [data-screen=left] img").first.bounding_box()
        right = page.locator("#pair-grid [data-screen=right] img").first.bounding_box()
        assert abs(left["y"] - right["y"]) < 2  # on one row
        assert left["x"] + left["width"] <= right["x"]  # left beside right
        srcs = page.eval_on_selector_all(".slides img", "imgs => imgs.map(i => i.getAttribute('src'))")
        assert len([s for s in srcs if "/original/" in s]) == 1  # one copy of the original...
        assert len([s for s in srcs if "/target/" in s]) == 1  # ...and of the target
        assert len([s for s in srcs if "/prediction/" in s]) == 2
        heads = page.eval_on_selector_all("#pair-grid .h", "hs => hs.map(h => h.textContent)")
        assert heads == ["original", "left prediction", "right prediction", "target"]
        assert page.evaluate("document.documentElement.scrollHeight") < 2200
        keys = page.inner_text("#keys-help")
        assert "left / the right prediction" in keys
        assert "active scale" not in keys and "damage" not in keys.lower() and "y / n" not in keys
        for agent in AGENTS:
            assert agent not in page.content()
        with page.expect_navigation():
            page.keyboard.press("1")  # saved at once, next item
        assert len(Campaign.open(site["campaigns"]["frank"][0]).current("frank")) == 1


def test_finished_queue_says_so_and_positions_are_clamped(site, browser, tmp_path):
    with annotator(site, browser, "gina", tmp_path) as page:
        assert "Item 1 of 2" in page.inner_text("#progress")
        assert page.locator("#queue-done").count() == 0
        for _ in range(2):
            for key in ("3", "4", "n"):
                page.keyboard.press(key)
            with page.expect_navigation():
                page.keyboard.press("Enter")
        page.wait_for_selector("#queue-done")
        done = page.inner_text("#queue-done")
        assert "All 2 items done" in done and "close this tab" in done
        assert _in_viewport(page, "#queue-done")
        page.goto(page.url.split("?")[0] + "?pos=999")  # past the end: the last item
        assert "Item 2 of 2 · 2 labelled" in page.inner_text("#progress")
        page.goto(page.url.split("?")[0] + "?pos=-5")
        assert "Item 1 of 2" in page.inner_text("#progress")


def test_task_table_paging_past_the_end_is_clamped(site, browser, tmp_path):
    page = browser.new_page()
    try:
        page.goto(f"{site['url']}/r/{run_id(site['run'])}?page=1000")
        count = page.inner_text("#task-count")
        assert count.startswith("10 pairs match")
        assert "1–10 shown" in count, count  # the last page, never "50001–10 shown"
        assert page.locator("#task-body tr").count() == 10
    finally:
        page.close()
