"""``arena view`` in a real browser: Playwright driving the system Chromium (never a downloaded one)
against a real server process, as a person would use it.

Open a run, filter, open a pair; label 10 items with the keyboard, reload, find them kept; two
annotators in two browser contexts at once; blind mode shows no agent name anywhere in the DOM; a
result line appended to ``results.jsonl`` appears in the open page within 2 s; hostile text runs no
script. With ``PPTARENA_DOCS_SCREENSHOTS=1`` the screenshots go to docs/img/ (for
docs/human-labels.md, slides rendered by LibreOffice) instead of the test's folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) is not installed")
from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.store import Campaign  # noqa: E402
from pptarena.view.runs import run_id  # noqa: E402
from tests.support.chromium import CHROMIUM  # noqa: E402
from tests.support.paths import ROOT  # noqa: E402
from tests.support.view_fixtures import MARKERS, serve, small_run, stop  # noqa: E402

pytestmark = pytest.mark.slow

DOCS = os.environ.get("PPTARENA_DOCS_SCREENSHOTS") == "1"
AGENTS = ("oracle", "noop")

if not Path(CHROMIUM).is_file():
    pytest.skip(f"no system Chromium at {CHROMIUM} (scripts/setup.sh installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp("view-browser")
    run = small_run(base, count=5)  # 10 attempts
    campaign, tokens = new_campaign(
        [run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0, seed=2, name="pilot"
    )
    proc, url, _ = serve([run], render=DOCS)
    shots = ROOT / "docs" / "img" if DOCS else base / "shots"
    shots.mkdir(parents=True, exist_ok=True)
    yield {"run": run, "url": url, "tokens": tokens, "campaign": campaign.path, "shots": shots}
    stop(proc)


def _shot(page, path: Path) -> None:
    """A screenshot; for the docs, reduced to a 64-colour palette (small files in git)."""
    page.screenshot(path=str(path))
    if DOCS:
        from PIL import Image

        with Image.open(path) as img:
            img.convert("RGB").quantize(64).save(path, optimize=True)


def _no_script_ran(page) -> None:
    for marker in (*MARKERS, "__pwned_f"):
        assert page.evaluate(f"typeof window.{marker}") == "undefined", marker


def test_open_a_run_filter_and_open_a_pair(site, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(site["url"] + "/")
    page.click(f"table.runs a:text-is('{site['run'].name}')")
    page.wait_for_selector("#task-table")
    page.select_option("select[name=agent]", "oracle")
    page.click("#filters button[type=submit]")
    page.wait_for_load_state()
    agents = page.locator("#task-body tr td:nth-child(2)").all_inner_texts()
    assert agents and set(agents) == {"oracle"}
    page.reload()
    # the leaderboard is computed in the background and swapped into the open page when ready
    page.wait_for_selector("#summary >> text=Paired comparison · structural", timeout=60_000)
    _shot(page, site["shots"] / "view-run.png")
    page.click("#task-body a >> text=task-1")
    page.wait_for_selector(".instruction")
    assert "Retitle slide 1 to New 1" in page.inner_text(".instruction")
    assert "Edits original → prediction" in page.content()
    _shot(page, site["shots"] / "view-pair.png")
    page.goto(f"{site['url']}/r/{run_id(site['run'])}/pair?task=task-0&agent=oracle")
    assert "<script>window.__pwned_i=1</script>" in page.inner_text(".instruction")  # shown as text
    _no_script_ran(page)
    page.close()


def _levels(site, page, good: tuple[str, str], bad: tuple[str, str]) -> tuple[str, str]:
    """The keys a person would press for the item shown: the test knows (from the campaign file,
    not the page) which agent made it, so the labels follow the agents' quality."""
    campaign = Campaign.open(site["campaign"])
    item = campaign.item_for_public(page.get_attribute("body", "data-item"))  # pages give public ids
    return good if campaign.items[item].agent == "oracle" else bad


def _label_with_keys(page, levels: tuple[str, str], damage: str = "n") -> None:
    page.keyboard.press(levels[0])
    page.keyboard.press(levels[1])
    page.keyboard.press(damage)
    page.keyboard.press("Enter")


def test_label_ten_items_with_the_keyboard_and_reload(site, browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = ctx.new_page()
    page.goto(f"{site['url']}/login?token={site['tokens']['alice']}")
    page.wait_for_selector("#label-form")
    _shot(page, site["shots"] / "view-label.png")
    typed = {}
    for k in range(10):
        content = page.content()
        for agent in AGENTS:  # blind: no agent name anywhere in the DOM
            assert agent not in content, (k, agent)
        _no_script_ran(page)
        levels = _levels(site, page, ("4", "4"), ("0", str(k % 4)))
        shown = page.get_attribute("body", "data-item")  # a public id
        typed[Campaign.open(site["campaign"]).item_for_public(shown)] = levels
        with page.expect_navigation():
            _label_with_keys(page, levels)
    page.reload()
    assert "10 labelled" in page.inner_text("#progress")
    current = Campaign.open(site["campaign"]).current("alice")
    assert len(current) == 10
    # what was typed is what was stored: first digit instruction following, second visual quality
    assert {i: (str(v.fields["if"]), str(v.fields["vq"])) for (_, i), v in current.items()} == typed
    # u undoes the last label of the item shown; its history lists every version
    with page.expect_navigation():
        page.keyboard.press("u")
    assert "9 labelled" in page.inner_text("#progress")
    assert "undo of version" in page.inner_text("#history")
    ctx.close()


def test_two_annotators_label_at_once(site, browser):
    contexts = [browser.new_context() for _ in range(2)]
    pages = [c.new_page() for c in contexts]
    for page, who in zip(pages, ("alice", "bob"), strict=True):
        page.goto(f"{site['url']}/login?token={site['tokens'][who]}")
        page.wait_for_selector("#label-form")
    before = {who: len(Campaign.open(site["campaign"]).history(who)) for who in ("alice", "bob")}
    for k in range(4):  # interleaved: alice, bob, alice, bob...
        for page in pages:
            with page.expect_navigation():
                _label_with_keys(page, _levels(site, page, ("3", "4"), ("1", "2")), "y" if k == 0 else "n")
    after = {who: len(Campaign.open(site["campaign"]).history(who)) for who in ("alice", "bob")}
    assert after["alice"] - before["alice"] == 4 and after["bob"] - before["bob"] == 4
    for c in contexts:
        c.close()


def test_appended_result_line_shows_within_two_seconds(site, browser):
    page = browser.new_page()
    page.goto(f"{site['url']}/r/{run_id(site['run'])}")
    page.wait_for_selector("#latest-list")
    results = site["run"] / "results.jsonl"
    row = json.loads(results.read_text().splitlines()[0])
    with results.open("a") as fh:
        live = "task-appended-live <img src=x onerror=window.__pwned_l=1>"
        fh.write(json.dumps({**row, "task_id": live, "agent": "oracle"}) + "\n")
    page.wait_for_selector("#latest-list >> text=task-appended-live", timeout=2000)
    assert page.inner_text("#pair-count") == "11"
    assert live in page.inner_text("#latest-list")  # drawn as text by the live script
    page.wait_for_selector("#task-body >> text=task-appended-live", timeout=3000)  # the table redrawn
    assert page.evaluate("typeof window.__pwned_l") == "undefined"
    page.close()


def test_campaign_page_shows_agreement(site, browser):
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    cid = Campaign.open(site["campaign"]).path  # the page is reached from the runs page
    page.goto(site["url"] + "/")
    page.click("a:text-is('pilot')")
    page.wait_for_selector("text=Between people")
    assert "α" in page.inner_text("pre") and str(cid) in page.content()
    _shot(page, site["shots"] / "view-campaign.png")
    page.close()


def test_pairwise_choices_with_the_keyboard(site, browser, tmp_path):
    """A pairwise campaign served by its own server: 1 / 2 / 0 pick left, right or tie and move on."""
    campaign, tokens = new_campaign(
        [site["run"]], protocol="pairwise", annotators=["carol"], seed=3, out=tmp_path / "pw.sqlite"
    )
    proc, url, _ = serve([site["run"]], "--campaign", str(campaign.path))
    try:
        page = browser.new_page()
        page.goto(f"{url}/login?token={tokens['carol']}")
        page.wait_for_selector("#label-form")
        queue = campaign.queue("carol")
        expected = {}
        for k, key in enumerate(("1", "2", "0")):
            item, swapped = queue[k]
            assert int(page.get_attribute("body", "data-item")) == campaign.public_id(item)
            for agent in AGENTS:
                assert agent not in page.content()
            with page.expect_navigation():
                page.keyboard.press(key)
            left, right = ("b", "a") if swapped else ("a", "b")
            expected[item] = {"1": left, "2": right, "0": "tie"}[key]
        got = {i: v.fields["choice"] for (_, i), v in Campaign.open(campaign.path).current("carol").items()}
        assert got == expected
        page.close()
    finally:
        stop(proc)
