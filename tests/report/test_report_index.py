"""Large-run reports: the index page (task table filtered and sorted in headless Chromium) and
the task pages.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

from pptarena.report.html import write_report
from pptarena.report.index import SINGLE_PAGE_MAX_PAIRS
from pptarena.report.pages import TASKS_PER_PAGE
from pptarena.run.folder.rundir import RunDir
from tests.support.chromium import CHROMIUM, dump_dom
from tests.support.report_fixtures import copy_run

EVIL = "evil</script><img src=x onerror=alert(1)>"


def synthetic_run(run_dir: Path, tasks: int) -> list[dict]:
    """A run folder of ``tasks`` tasks x two agents written as result lines (no decks); returns the rows."""
    rng = random.Random(3)
    layout = RunDir(run_dir)
    run_dir.mkdir(parents=True)
    layout.manifest.write_text(json.dumps({"agents": ["noop", "oracle"], "judges": ["rubric", "structural"]}))
    rows = []
    for t in range(tasks):
        task = EVIL if t == 7 else f"task-{t:04d}"
        for agent in ("noop", "oracle"):
            status = ("scored", "scored", "scored", "agent_error", "timeout")[rng.randrange(5)]
            scores = {}
            if status == "scored":
                scores = {
                    "rubric": {"score": rng.choice((0.0, 0.25, 0.5, 1.0)), "metrics": {}},
                    "structural": {"score": round(rng.random(), 3), "metrics": {}},
                }
            rows.append(
                {
                    "agent": agent,
                    "task_id": task,
                    "status": status,
                    "scores": scores,
                    "error": None if scores else "boom",
                    "duration_s": round(rng.uniform(1, 9), 2),
                }
            )
            folder = layout.pair(agent, task)
            folder.mkdir(parents=True)
            if scores:
                tree = {
                    "name": "root",
                    "score": scores["rubric"]["score"],
                    "children": [{"name": f"leaf of {task}", "score": scores["rubric"]["score"]}],
                }
                (folder / "verdicts.json").write_text(
                    json.dumps(
                        {
                            "verdicts": {
                                "rubric": {"score": scores["rubric"]["score"], "details": {"tree": tree}}
                            }
                        }
                    )
                )
    layout.results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def shown(dom: str) -> int:
    m = re.search(r'data-shown="(\d+)"', dom)
    assert m, "the page's script did not run"
    return int(m.group(1))


def table_rows(dom: str) -> list[list[str]]:
    body = re.search(r'<tbody id="task-body">(.*?)</tbody>', dom, re.S)
    assert body
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)
    ]


@pytest.fixture
def big(tmp_path):
    tasks = SINGLE_PAGE_MAX_PAIRS // 2 + 30  # over the single-page limit: the auto layout gives pages
    run_dir = tmp_path / "run"
    rows = synthetic_run(run_dir, tasks)
    return run_dir, rows


def test_auto_layout_writes_an_index_and_task_pages(big):
    run_dir, rows = big
    index = write_report(run_dir, render=False)
    html = index.read_text()
    data = json.loads(
        re.search(r'<script type="application/json" id="task-data">(.*?)</script>', html, re.S).group(1)
    )
    assert len(data["rows"]) == len(rows) and len(data["tasks"]) == len(rows) // 2
    assert '<section class="task"' not in html  # no task sections on the index
    assert EVIL not in html and "<img src=x" not in html  # the hostile task id is JSON-escaped
    pages = sorted((run_dir / "report").glob("tasks-*.html"))
    assert len(pages) == -(-len(rows) // 2 // TASKS_PER_PAGE)
    for _task, link in data["tasks"]:
        assert (run_dir / link).is_file(), link
    first = pages[0].read_text()
    assert "leaf of task-0000" in first and 'href="report.html"' in first and "<base href='../'>" in first
    assert first.count('<section class="task"') == TASKS_PER_PAGE
    # a smaller run reported into the same folder leaves no stale page behind; the single layout still works
    keep = 2 * (2 * TASKS_PER_PAGE) + 2  # two agents a task: two full pages and one task on a third
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:keep]))
    write_report(run_dir, render=False, layout="pages")
    assert sorted(p.name for p in (run_dir / "report").glob("tasks-*.html")) == [p.name for p in pages[:3]]
    assert '<section class="task"' in write_report(run_dir, render=False, layout="single").read_text()


@pytest.mark.slow
def test_index_filters_and_sorts_in_headless_chromium(big, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed")
    run_dir, rows = big
    url = write_report(run_dir, render=False).resolve().as_uri()
    profile = tmp_path / "profile"
    dom = dump_dom(url, profile)
    assert shown(dom) == len(rows)
    assert re.search(r'data-ready-ms="\d+"', dom)
    assert len(table_rows(dom)) == 100  # one screenful drawn
    assert "<img src=x" not in dom and "evil&lt;/script&gt;&lt;img src=x" in dom  # shown as text only

    errors = sum(r["status"] == "agent_error" for r in rows)
    dom = dump_dom(url + "#status=agent_error", profile)
    assert shown(dom) == errors and all(r[2] == "agent_error" for r in table_rows(dom))

    noop_timeouts = sum(r["agent"] == "noop" and r["status"] == "timeout" for r in rows)
    dom = dump_dom(url + "#status=timeout&agent=noop", profile)
    assert shown(dom) == noop_timeouts and all(r[1] == "noop" for r in table_rows(dom))

    dom = dump_dom(url + "#q=task-001", profile)
    assert shown(dom) == 2 * 10  # task-0010 ... task-0019, two agents each

    def spread(r: dict) -> float | None:
        s = [b["score"] for b in r["scores"].values()]
        return max(s) - min(s) if len(s) >= 2 else None

    spreads = [d for r in rows if (d := spread(r)) is not None]
    dom = dump_dom(url + "#dis=0.5&sort=-disagreement", profile)
    assert shown(dom) == sum(d >= 0.5 - 1e-9 for d in spreads)
    listed = [float(r[5]) for r in table_rows(dom)]
    assert listed == sorted(listed, reverse=True) and abs(listed[0] - max(spreads)) < 1e-3

    dom = dump_dom(url + "#sort=s0&status=scored", profile)
    scores = [float(r[3]) for r in table_rows(dom)]
    assert scores == sorted(scores) and scores[0] == min(
        r["scores"]["rubric"]["score"] for r in rows if r["scores"]
    )


@pytest.mark.slow
def test_task_page_opens_from_the_index_on_a_real_run(tmp_path_factory, tmp_path, demo_run):
    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed")
    run_dir = copy_run(demo_run, tmp_path / "demo-run")
    index = write_report(run_dir, layout="pages")
    profile = tmp_path / "profile"
    dom = dump_dom(index.resolve().as_uri() + "#q=birds-align", profile)
    links = re.findall(r'<a href="([^"]+)"[^>]*>birds-align-pictures</a>', dom)
    assert len(links) == 2  # noop and oracle
    page_link, anchor = links[1].split("#")
    page = (run_dir / unquote(page_link)).resolve()
    assert page.is_file()
    page_dom = dump_dom(page.as_uri() + "#" + anchor, profile)
    assert f'id="{anchor}"' in page_dom  # the link lands on the pair
    assert "On slide 3, align the three bird pictures" in page_dom
    assert '<ul class="tree root">' in page_dom and "Edits original → prediction" in page_dom
    sources = re.findall(r'<img[^>]* src="([^"]+)"', page.read_text())
    assert sources
    for src in sources:
        assert not src.startswith(("http:", "https:", "/", "file:")), src
        assert (run_dir / unquote(src)).resolve().is_file(), src  # relative to <base href="../">


def test_task_pages_pass_the_redactor_like_the_index(tmp_path, monkeypatch):
    """The attack: a secret the run folder still holds (a verdict written by an older version, a key
    set after the run) must not reach any page of the report, task pages included."""
    secret = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("PPTARENA_TEST_API_KEY", secret)
    run_dir = tmp_path / "run"
    synthetic_run(run_dir, 2 * TASKS_PER_PAGE)
    verdicts = RunDir(run_dir).pair("oracle", "task-0000") / "verdicts.json"
    verdicts.parent.mkdir(parents=True, exist_ok=True)
    tree = {"name": "root", "score": 1.0, "children": [{"name": f"leaf saw {secret}", "score": 1.0}]}
    verdicts.write_text(json.dumps({"verdicts": {"rubric": {"score": 1.0, "details": {"tree": tree}}}}))
    index = write_report(run_dir, render=False, layout="pages")
    pages = sorted((run_dir / "report").glob("tasks-*.html"))
    assert pages and "leaf saw ***" in pages[0].read_text()
    for page in [index, *pages]:
        assert secret not in page.read_text(), page
