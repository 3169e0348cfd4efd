"""``arena view`` pages and its live index, in process (Starlette's test client) on real runs."""

from __future__ import annotations

import json
import random
import time

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from benchmarks.report_bench import make_run  # noqa: E402 - the benchmark's synthetic run
from pptarena.view.app import ViewState, create_app  # noqa: E402
from pptarena.view.runindex import Query, RunIndex  # noqa: E402
from tests.support.view_fixtures import small_run  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("view-run"))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("view-synth") / "run"
    make_run(folder, 400, seed=3)
    return folder


def client(paths, **kw):
    state = ViewState(paths, render=False, **kw)
    return state, TestClient(create_app(state), base_url="http://127.0.0.1:8000")


def _brute(rows, q: Query):
    out = [
        r
        for r in rows
        if (not q.status or r["status"] == q.status)
        and (not q.agent or r["agent"] == q.agent)
        and (not q.text or q.text.lower() in r["task_id"].lower())
        and (
            q.min_disagreement is None
            or (r["disagreement"] is not None and r["disagreement"] >= q.min_disagreement)
        )
    ]
    if q.sort == "line":
        return out[::-1] if q.descending else out

    def value(r):
        if q.sort.startswith("judge:"):
            return r["scores"][q.sort[6:]]
        return r[{"duration": "duration_s", "task": "task_id"}.get(q.sort, q.sort)]

    known = sorted((r for r in out if value(r) is not None), key=value, reverse=q.descending)  # stable
    out = known + [r for r in out if value(r) is None]
    return out


def test_table_queries_match_a_brute_force_filter_and_sort(synthetic):
    index = RunIndex(synthetic / "results.jsonl")
    index.refresh()
    everything = index.query(Query(per_page=10_000))[1]
    assert len(everything) == 400 and len(index) == 400
    rng = random.Random(0)
    for _ in range(60):
        q = Query(
            status=rng.choice(["", "scored", "timeout"]),
            agent=rng.choice(["", "noop", "oracle"]),
            text=rng.choice(["", "000", "TEXT", "table"]),
            min_disagreement=rng.choice([None, 0.0, 0.25]),
            sort=rng.choice(["line", "task", "duration", "judge:rubric", "disagreement"]),
            descending=rng.random() < 0.5,
            page=rng.choice([0, 1]),
            per_page=25,
        )
        total, rows = index.query(q)
        expected = _brute(everything, q)
        assert total == len(expected), q
        want = expected[q.page * 25 : (q.page + 1) * 25]
        assert [(r["task_id"], r["agent"]) for r in rows] == [(r["task_id"], r["agent"]) for r in want], q


def test_index_reads_only_what_was_appended(tmp_path):
    results = tmp_path / "results.jsonl"
    line = {"agent": "a", "task_id": "t1", "status": "scored", "scores": {"j": {"score": 0.5}}}
    results.write_text(json.dumps(line) + "\n")
    index = RunIndex(results)
    assert index.refresh() == 1
    first_len = results.stat().st_size
    # overwrite the first line in place (same length): an index that re-read the file would see it
    with results.open("r+b") as fh:
        fh.write(json.dumps({**line, "task_id": "XX"}).encode())
    with results.open("a") as fh:
        fh.write(json.dumps({**line, "task_id": "t2"}) + "\n")
        fh.write(json.dumps({**line, "task_id": "t3"})[:20])  # a line still being written
    assert index.refresh() == 1 and index.offset > first_len
    assert [r["task_id"] for r in index.query(Query())[1]] == ["t1", "t2"]
    with results.open("a") as fh:
        fh.write(json.dumps({**line, "task_id": "t3"})[20:] + "\n")
        fh.write(json.dumps({**line, "task_id": "t1", "status": "timeout", "scores": {}}) + "\n")  # a retry
    assert index.refresh() == 2
    rows = index.query(Query())[1]
    assert [(r["task_id"], r["status"]) for r in rows] == [
        ("t1", "timeout"),
        ("t2", "scored"),
        ("t3", "scored"),
    ]
    assert [r["task_id"] for r in index.since(2)] == ["t1", "t3"]  # newest first
    results.write_text(json.dumps(line) + "\n")  # replaced by a shorter file: start over
    index.refresh()
    assert len(index) == 1


def test_index_keeps_exactly_the_lines_read_results_keeps(tmp_path):
    from pptarena.run.folder.records import ResultRow
    from pptarena.run.folder.results import read_results
    from pptarena.view.runindex import attempt_row

    results = tmp_path / "results.jsonl"
    good = {"agent": "a", "task_id": "t1", "status": "scored", "epoch": 2, "scores": {"j": {"score": 0.5}}}
    lines = [
        good,
        {**good, "task_id": "t2", "error": "bad \udcff byte"},  # a lone surrogate escape: Python reads it
        {**good, "task_id": "t3", "status": "weird"},  # not a status
        {**good, "task_id": "t4", "duration_s": -1},  # not a duration
        {**good, "scores": {"j": 0.9}},  # a later line for t1 that is not a row does not replace it
    ]
    results.write_text("".join(json.dumps(x) + "\n" for x in lines))
    index = RunIndex(results)
    index.refresh()
    kept = read_results(results)
    assert [r.task_id for r in kept] == ["t1", "t2"]
    table = index.query(Query())[1]
    assert [(r["task_id"], r["epoch"], r["scores"]) for r in table] == [
        ("t1", 2, {"j": 0.5}),
        ("t2", 2, {"j": 0.5}),
    ]
    assert index.problems == 3 and index.lines == 5
    rows = index.task_rows("t1")
    assert len(rows) == 1 and isinstance(rows[0], ResultRow)
    assert rows[0].key == ("a", "t1", 2) and rows[0].score("j") == 0.5 and rows[0] == kept[0]
    assert attempt_row(index, "t2", "a", 2) == kept[1] and kept[1].error == "bad \udcff byte"
    assert attempt_row(index, "t3", "a", 2) is None and index.task_rows("t4") == []


def test_run_page_summary_is_the_reports(run):
    from pptarena.report.data import load_run
    from pptarena.report.tables import comparison_tables

    state, c = client([run.parent])
    assert len(state.runs) == 1
    rid = next(iter(state.runs))
    page = c.get(f"/r/{rid}")
    assert page.status_code == 200 and "Task table" in page.text
    deadline = time.monotonic() + 30
    while "Paired comparison" not in page.text and time.monotonic() < deadline:
        time.sleep(0.2)
        page = c.get(f"/r/{rid}")
    assert "Leaderboard" in page.text and "Paired comparison · structural" in page.text
    # the same tables as report.html: the comparison cell the report computes is on the page
    data = load_run(run)
    cell = comparison_tables(data.summary)[0].rows[0][2]
    assert cell.replace("+", "") in page.text.replace("+", "")
    assert "<script>" not in page.text.replace('<script src="/static/view.js" defer></script>', "")


def test_pair_page_and_compare(run):
    state, c = client([run])
    rid = next(iter(state.runs))
    page = c.get(f"/r/{rid}/pair", params={"task": "task-1", "agent": "oracle"})
    assert page.status_code == 200
    text = page.text
    assert "Retitle slide 1 to New 1" in text  # the instruction
    assert "Edits original → prediction" in text and "New 1" in text
    assert "structural" in text  # the verdict
    assert c.get(f"/r/{rid}/pair", params={"task": "task-1", "agent": "nobody"}).status_code == 404
    assert f"/compare?a={rid}&amp;b={rid}&amp;task=task-1&amp;agent_a=oracle&amp;agent_b=noop" in text
    both = c.get(
        "/compare", params={"a": rid, "b": rid, "task": "task-1", "agent_a": "oracle", "agent_b": "noop"}
    )
    assert both.status_code == 200 and both.text.count('class="side"') == 2


def test_live_since_and_table_api(run, tmp_path):
    import shutil

    live = shutil.copytree(run, tmp_path / "live")
    state, c = client([live])
    rid = next(iter(state.runs))
    first = c.get(f"/r/{rid}/api/since", params={"seq": 0}).json()
    assert first["pairs"] == 6
    row = json.loads((live / "results.jsonl").read_text().splitlines()[0])
    with (live / "results.jsonl").open("a") as fh:
        fh.write(json.dumps({**row, "task_id": "task-new", "agent": "oracle"}) + "\n")
    got = c.get(f"/r/{rid}/api/since", params={"seq": first["seq"]}).json()
    assert [r["task_id"] for r in got["rows"]] == ["task-new"] and got["pairs"] == 7
    table = c.get(f"/r/{rid}/api/table", params={"q": "new"}).json()
    assert table["total"] == 1


def test_runs_page_lists_runs_found_below_a_folder(run):
    state, c = client([run.parent.parent])
    page = c.get("/")
    assert page.status_code == 200 and run.name in page.text and "finished" in page.text
    assert "6 of 6" in page.text  # attempts done of tasks × agents × epochs


@pytest.mark.slow
def test_pairwise_item_page_and_sides(run, tmp_path):
    from pptarena.label.campaign import new_campaign
    from pptarena.label.store import Campaign

    campaign, tokens = new_campaign(
        [run],
        protocol="pairwise",
        annotators=["alice", "bob"],
        overlap=1.0,
        seed=5,
        out=tmp_path / "p.sqlite",
    )
    state, c = client([run], campaigns=[campaign.path])
    c.get("/login", params={"token": tokens["alice"]})
    cid = next(iter(state.campaigns))
    stored = {}
    for pos, (item, swapped) in enumerate(campaign.queue("alice")):
        page = c.get(f"/c/{cid}/label", params={"pos": pos}).text
        assert "Prediction on the left" in page and "Prediction on the right" in page
        assert "oracle" not in page and "noop" not in page  # blind
        csrf = page.split('data-csrf="', 1)[1].split('"', 1)[0]
        r = c.post(
            f"/c/{cid}/api/label",
            json={"item": campaign.public_id(item), "fields": {"choice": "left"}},
            headers={"X-CSRF-Token": csrf, "Origin": "http://127.0.0.1:8000"},
        )
        assert r.status_code == 200, r.text
        stored[item] = "b" if swapped else "a"  # the left side is B when the item is shown swapped
    got = {i: v.fields["choice"] for (_, i), v in Campaign.open(campaign.path).current("alice").items()}
    assert got == stored and set(got.values()) == {"a", "b"}  # both orders occurred (seeded)


def test_pair_page_folds_every_rendered_slide(run, tmp_path):
    import shutil

    from PIL import Image

    copy = shutil.copytree(run, tmp_path / "run")
    for role, n in (("original", 1), ("original", 2), ("prediction", 1)):
        out = copy / "tasks" / "oracle" / "task-1" / "renders" / role
        out.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 6), "white").save(out / f"slide-{n:03d}.png")
    state, c = client([copy])
    rid = next(iter(state.runs))
    page = c.get(f"/r/{rid}/pair", params={"task": "task-1", "agent": "oracle"}).text
    assert "All rendered slides (2)" in page
    src = f"/r/{rid}/f/tasks/oracle/task-1/renders/original/slide-002.png"
    assert f'src="{src}"' in page
    img = c.get(src)
    assert img.status_code == 200 and img.headers["content-type"] == "image/png"
