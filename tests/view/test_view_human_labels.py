"""Labels beside scores (issue 34, item 6): the people columns of ``arena view``'s task table and
the filter "judge and people disagree", in process (Starlette's test client) on a real run (oracle
and noop on three tasks, the structural judge: 1.0 for the oracle, 0.0 for the noop) with campaigns
made and labelled through :mod:`pptarena.label`; labels are also written through the annotators'
own label API. An annotator's session is refused the table and its data.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.store import Campaign  # noqa: E402
from pptarena.run.folder.results import read_results  # noqa: E402
from pptarena.view import human_labels  # noqa: E402
from pptarena.view.app import ViewState, create_app  # noqa: E402
from pptarena.view.labelling import campaign_id  # noqa: E402
from pptarena.view.runs import run_id  # noqa: E402
from pptarena.view.security import COOKIE, campaign_cookie  # noqa: E402
from tests.support.view_fixtures import small_run  # noqa: E402

BASE = "http://127.0.0.1:8000"
OFF_LOOPBACK = "http://192.0.2.10:8000"
JUDGE = "structural"

#: absolute labels (instruction following) per (task, agent): alice's, then bob's (None: no label)
IF_LABELS = {
    ("task-0", "oracle"): (4, 4),  # mean 4 → 1.0 on 0-1, the judge says 1.0: gap 0
    ("task-1", "oracle"): (4, 0),  # mean 2 → 0.5 against 1.0: gap 0.5, disagree
    ("task-2", "oracle"): (1, None),  # mean 1 → 0.25 against 1.0: gap 0.75, disagree
    ("task-0", "noop"): (0, 1),  # mean 0.5 → 0.125 against 0.0: gap 0.125
    ("task-1", "noop"): (3, 2),  # mean 2.5 → 0.625 against 0.0: gap 0.625, disagree
    ("task-2", "noop"): (None, None),  # no label
}
#: pairwise choices per task (a = noop, b = oracle: the campaign's (task, agent) order)
CHOICES = {
    "task-0": ("b", "b"),  # the oracle wins both: as the judge says
    "task-1": ("a", "tie"),  # noop 1.5 of 2, oracle 0.5 of 2: gap 0.75 each
    "task-2": ("tie", None),  # 0.5 each: gap 0.5 each
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("view-human-labels"))


def _absolute(runs, out):
    """An absolute campaign over ``runs`` labelled as :data:`IF_LABELS` (bob's task-1/noop label
    is his second version, his task-2/oracle label was undone: neither earlier one counts)."""
    c, tokens = new_campaign(runs, protocol="absolute", annotators=["alice", "bob"], overlap=1.0, out=out)
    for item_id, it in c.items.items():
        alice, bob = IF_LABELS[(it.task_id, it.agent)]
        if alice is not None:
            c.append("alice", item_id, {"if": alice, "vq": 2, "damage": "no"}, 1.0)
        if (it.task_id, it.agent) == ("task-1", "noop"):
            c.append("bob", item_id, {"if": 0, "vq": 2, "damage": "no"}, 1.0)
        if (it.task_id, it.agent) == ("task-2", "oracle"):
            c.append("bob", item_id, {"if": 4, "vq": 2, "damage": "no"}, 1.0)
            c.undo("bob", item_id)
        if bob is not None:
            c.append("bob", item_id, {"if": bob, "vq": 2, "damage": "yes", "damage_slide": 1}, 1.0)
    c.close()
    return out, tokens


def _pairwise(runs, out):
    c, tokens = new_campaign(runs, protocol="pairwise", annotators=["alice", "bob"], overlap=1.0, out=out)
    for item_id, it in c.items.items():
        assert (it.agent, it.agent_b) == ("noop", "oracle")
        for who, choice in zip(("alice", "bob"), CHOICES[it.task_id], strict=True):
            if choice is not None:
                c.append(who, item_id, {"choice": choice}, 1.0)
    c.close()
    return out, tokens


@pytest.fixture
def site(run, tmp_path):
    """The run served with both campaigns: (state, admin client, run id, absolute id, pairwise id, tokens)."""
    absolute, tokens = _absolute([run], tmp_path / "if.sqlite")
    pairwise, _ = _pairwise([run], tmp_path / "duel.sqlite")
    state = ViewState([run], render=False, campaigns=[absolute, pairwise])
    client = TestClient(create_app(state), base_url=BASE)
    return state, client, next(iter(state.runs)), campaign_id(absolute), campaign_id(pairwise), tokens


def _table(client, rid, **params):
    got = client.get(f"/r/{rid}/api/table", params=params)
    assert got.status_code == 200, got.text
    return got.json()


def _by_pair(rows, cid):
    return {(r["task_id"], r["agent"]): r["people"][cid] for r in rows}


def _expected_absolute():
    """What the column must say, from :data:`IF_LABELS` (the judge: 1.0 oracle, 0.0 noop)."""
    out = {}
    for pair, labels in IF_LABELS.items():
        given = [x for x in labels if x is not None]
        if not given:
            out[pair] = None
            continue
        mean = sum(given) / len(given)
        judge = 1.0 if pair[1] == "oracle" else 0.0
        out[pair] = {"mean": mean, "n": len(given), "unit": mean / 4, "gap": abs(judge - mean / 4)}
    return out


def test_the_column_holds_each_pairs_mean_and_count(site, run):
    _, client, rid, a_id, p_id, _ = site
    data = _table(client, rid)
    assert [c["id"] for c in data["campaigns"]] == [a_id, p_id]
    assert [c["scale"] for c in data["campaigns"]] == ["IF 0–4", "win share"]
    # the judge really scores as the expectations assume
    assert {(r.task_id, r.agent): r.score(JUDGE) for r in read_results(run / "results.jsonl")} == {
        (f"task-{i}", a): (1.0 if a == "oracle" else 0.0) for i in range(3) for a in ("oracle", "noop")
    }
    assert _by_pair(data["rows"], a_id) == _expected_absolute()
    assert _by_pair(data["rows"], p_id) == {
        ("task-0", "oracle"): {"mean": 1.0, "n": 2, "unit": 1.0, "gap": 0.0},
        ("task-0", "noop"): {"mean": 0.0, "n": 2, "unit": 0.0, "gap": 0.0},
        ("task-1", "oracle"): {"mean": 0.25, "n": 2, "unit": 0.25, "gap": 0.75},
        ("task-1", "noop"): {"mean": 0.75, "n": 2, "unit": 0.75, "gap": 0.75},
        ("task-2", "oracle"): {"mean": 0.5, "n": 1, "unit": 0.5, "gap": 0.5},
        ("task-2", "noop"): {"mean": 0.5, "n": 1, "unit": 0.5, "gap": 0.5},
    }
    page = client.get(f"/r/{rid}").text
    assert "people · " in page and "(IF 0–4)" in page and "(win share)" in page
    (row,) = [r for r in page.split("<tr class=") if ">task-1</a>" in r and "<td>oracle</td>" in r]
    cells = re.findall(r'<td class="people"[^>]*>(.*?)</td>', row, re.S)
    assert cells == ['2.00 <span class="muted">(2)</span>', '0.25 <span class="muted">(2)</span>']


def test_sorting_on_the_people_column(site):
    _, client, rid, a_id, _, _ = site
    rows = _table(client, rid, sort=f"-people:{a_id}")["rows"]
    means = [r["people"][a_id]["unit"] if r["people"][a_id] else None for r in rows]
    assert means == [1.0, 0.625, 0.5, 0.25, 0.125, None]  # unlabelled pairs last, as judges' blanks


def test_the_filter_keeps_exactly_the_pairs_where_judge_and_people_disagree(site):
    _, client, rid, a_id, p_id, _ = site
    expected = {pair for pair, v in _expected_absolute().items() if v and v["gap"] >= 0.5}
    assert expected == {("task-1", "oracle"), ("task-2", "oracle"), ("task-1", "noop")}
    got = _table(client, rid, disagree=a_id)
    assert got["total"] == 3 and {(r["task_id"], r["agent"]) for r in got["rows"]} == expected
    assert got["query"] == {"disagree": a_id}
    # another threshold, and the other campaign (pairwise: judge's win share against the people's)
    assert {(r["task_id"], r["agent"]) for r in _table(client, rid, disagree=a_id, gap="0.7")["rows"]} == {
        ("task-2", "oracle")
    }
    assert {(r["task_id"], r["agent"]) for r in _table(client, rid, disagree=p_id)["rows"]} == {
        ("task-1", "oracle"), ("task-1", "noop"), ("task-2", "oracle"), ("task-2", "noop")
    }  # fmt: skip
    assert _table(client, rid, disagree=p_id, gap="0.6")["total"] == 2
    # with the other filters, a sort, and a page past the end (clamped to the last page)
    both = _table(client, rid, disagree=a_id, agent="oracle", sort=f"-people:{a_id}", page="7")
    assert [(r["task_id"], r["people"][a_id]["mean"]) for r in both["rows"]] == [
        ("task-1", 2.0),
        ("task-2", 1.0),
    ]
    assert both["page"] == 0 and both["query"] == {
        "agent": "oracle",
        "disagree": a_id,
        "sort": f"-people:{a_id}",
    }
    # the run page's links keep the filter (sort headers), and its form shows it
    page = client.get(f"/r/{rid}", params={"disagree": a_id, "gap": "0.7", "page": "3"}).text
    assert "1 pairs match, 1–1 shown" in page
    assert f'<option value="{a_id}" selected>' in page and 'name="gap"' in page and 'value="0.7"' in page
    sort_links = re.findall(r'<th><a href="([^"]+)"', page)
    assert sort_links and all(f"disagree={a_id}" in u and "gap=0.7" in u for u in sort_links)


def test_bad_filter_values_are_ignored(site):
    _, client, rid, a_id, _, _ = site
    assert _table(client, rid, disagree="no-such-campaign")["total"] == 6  # dropped, as shown
    assert _table(client, rid, disagree="no-such-campaign")["query"] == {}
    assert _table(client, rid, disagree=a_id, gap="nan")["total"] == 3  # the default threshold
    assert _table(client, rid, disagree=a_id, gap="abc")["query"] == {"disagree": a_id}
    clamped = _table(client, rid, disagree=a_id, gap="5")
    assert clamped["query"]["gap"] == "1" and clamped["total"] == 0  # no gap reaches 1 here
    assert _table(client, rid, disagree=a_id, gap="-1")["total"] == 5  # 0: every labelled pair


def _annotator(app, token):
    annotator = TestClient(app, base_url=BASE)
    got = annotator.get("/login", params={"token": token}, follow_redirects=False)
    assert got.status_code == 303
    page = annotator.get(got.headers["location"])
    assert page.status_code == 200, page.text
    return annotator, page.text


def test_a_new_label_refreshes_the_column_and_nothing_else_reads_the_store(site, monkeypatch):
    state, client, rid, a_id, _, tokens = site
    reads = []
    real = Campaign.current

    def counted(self, annotator=None):
        reads.append(self.name)
        return real(self, annotator)

    monkeypatch.setattr(Campaign, "current", counted)
    first = _table(client, rid, disagree=a_id)
    assert reads.count(state.campaigns[a_id].campaign.name) == 1
    for params in ({}, {"disagree": a_id}, {"sort": f"people:{a_id}"}, {"agent": "noop"}):
        _table(client, rid, **params)
    client.get(f"/r/{rid}")
    assert reads.count(state.campaigns[a_id].campaign.name) == 1  # unchanged store: the cache answers
    assert first["total"] == 3

    # alice labels her first open item (task-2/noop) through her own page and the label API
    annotator, page = _annotator(client.app, tokens["alice"])
    item = int(re.search(r'data-item="(\d+)"', page).group(1))
    csrf = re.search(r'data-csrf="([^"]+)"', page).group(1)
    campaign = state.campaigns[a_id].campaign
    internal = campaign.item_for_public(item)
    assert (campaign.items[internal].task_id, campaign.items[internal].agent) == ("task-2", "noop")
    saved = annotator.post(
        f"/c/{a_id}/api/label",
        content=json.dumps({"item": item, "fields": {"if": 3, "vq": 1, "damage": "no"}, "seconds": 2}),
        headers={"X-CSRF-Token": csrf, "Origin": BASE, "Content-Type": "application/json"},
    )
    assert saved.status_code == 200, saved.text
    reads.clear()
    after = _table(client, rid, disagree=a_id)
    assert reads.count(campaign.name) == 1
    assert _by_pair(after["rows"], a_id)[("task-2", "noop")] == {
        "mean": 3.0,
        "n": 1,
        "unit": 0.75,
        "gap": 0.75,
    }
    assert after["total"] == 4
    # a label written by another process (another connection to the file) is seen too
    with Campaign.open(campaign.path) as other:
        own = next(i for i, it in other.items.items() if (it.task_id, it.agent) == ("task-2", "noop"))
        other.append("bob", own, {"if": 1, "vq": 1, "damage": "no"}, None)
    assert _by_pair(_table(client, rid)["rows"], a_id)[("task-2", "noop")] == {
        "mean": 2.0, "n": 2, "unit": 0.5, "gap": 0.5
    }  # fmt: skip


def test_new_result_lines_move_the_judge_side_of_the_gap(run, tmp_path):
    """A retried attempt (a later line for the same pair) with another score, and a new attempt the
    campaign has no label of, while the table is served."""
    live = shutil.copytree(run, tmp_path / "live")
    path, _ = _absolute([live], tmp_path / "live-if.sqlite")
    state = ViewState([live], render=False, campaigns=[path])
    client = TestClient(create_app(state), base_url=BASE)
    rid, cid = next(iter(state.runs)), campaign_id(path)
    assert _table(client, rid, disagree=cid)["total"] == 3
    lines = (live / "results.jsonl").read_text().splitlines()
    row = next(json.loads(x) for x in lines if '"task-0"' in x and '"oracle"' in x)
    retried = json.loads(json.dumps(row))
    retried["scores"][JUDGE]["score"] = 0.0  # the judge now says 0 where the people said 4 of 4
    added = {**json.loads(json.dumps(row)), "task_id": "task-new"}
    with (live / "results.jsonl").open("a") as fh:
        fh.write(json.dumps(retried) + "\n" + json.dumps(added) + "\n")
    got = _table(client, rid, disagree=cid)
    assert {(r["task_id"], r["agent"]) for r in got["rows"]} == {
        ("task-0", "oracle"), ("task-1", "oracle"), ("task-2", "oracle"), ("task-1", "noop")
    }  # fmt: skip
    everything = _by_pair(_table(client, rid)["rows"], cid)
    assert everything[("task-0", "oracle")]["gap"] == 1.0 and everything[("task-new", "oracle")] is None


def test_a_run_without_campaigns_has_no_people_columns(run):
    state = ViewState([run], render=False)
    client = TestClient(create_app(state), base_url=BASE)
    rid = next(iter(state.runs))
    data = _table(client, rid, disagree="anything")
    assert data["campaigns"] == [] and data["total"] == 6 and all("people" not in r for r in data["rows"])
    page = client.get(f"/r/{rid}").text
    assert 'name="disagree"' not in page and "people · " not in page


@pytest.mark.parametrize("base", [OFF_LOOPBACK, BASE])
def test_an_annotator_session_gets_403_for_the_table_and_its_labels(run, tmp_path, base):
    """The attack: an annotator's session id sent to the run page and the table API (under their
    campaign's cookie name and under the admin's), asking for the people columns and the filter."""
    absolute, tokens = _absolute([run], tmp_path / "if.sqlite")
    pairwise, _ = _pairwise([run], tmp_path / "duel.sqlite")
    host = "0.0.0.0" if base == OFF_LOOPBACK else "127.0.0.1"
    state = ViewState(
        [run], host=host, render=False, campaigns=[absolute, pairwise], admin_token="admin-secret"
    )
    app = create_app(state)
    rid, a_id, p_id = next(iter(state.runs)), campaign_id(absolute), campaign_id(pairwise)
    login = TestClient(app, base_url=base).get(
        "/login", params={"token": tokens["bob"]}, follow_redirects=False
    )
    assert login.status_code == 303
    sid = login.cookies[campaign_cookie(a_id)]
    asks = [
        (f"/r/{rid}/api/table", {"disagree": a_id}),
        (f"/r/{rid}/api/table", {"sort": f"-people:{p_id}", "disagree": p_id, "gap": "0"}),
        (f"/r/{rid}", {"disagree": p_id}),
    ]
    for cookie in (campaign_cookie(a_id), COOKIE):
        for url, params in asks:
            probe = TestClient(app, base_url=base)
            got = probe.get(url, params=params, headers={"cookie": f"{cookie}={sid}"})
            assert got.status_code == 403, (url, cookie)
            assert "people" not in got.text and "oracle" not in got.text and JUDGE not in got.text
    if base == OFF_LOOPBACK:  # off loopback nobody without the admin's session gets it either
        assert TestClient(app, base_url=base).get(f"/r/{rid}/api/table").status_code == 403
    admin = TestClient(app, base_url=base)
    admin.get("/login", params={"token": "admin-secret"})
    data = _table(admin, rid, disagree=a_id)
    assert data["total"] == 3 and all(a_id in r["people"] for r in data["rows"])


def test_pairwise_items_across_two_runs_count_for_the_side_in_each_run(run, tmp_path):
    """An item comparing the oracle of one run with the oracle of another: each run's column counts
    its own side's votes; no judge compares scores across runs (gap None)."""
    other = shutil.copytree(run, tmp_path / "other")
    c, _ = new_campaign([run, other], protocol="pairwise", annotators=["alice"], out=tmp_path / "x.sqlite")
    across = {
        item_id: it
        for item_id, it in c.items.items()
        if it.run != it.run_b and it.agent == it.agent_b == "oracle"
    }
    assert len(across) == 3
    for item_id, it in across.items():
        a_is_this = it.run == str(run.resolve())
        c.append("alice", item_id, {"choice": "a" if a_is_this else "b"}, None)  # this run's oracle wins
    c.close()
    state = ViewState([run, other], render=False, campaigns=[tmp_path / "x.sqlite"])
    client = TestClient(create_app(state), base_url=BASE)
    cid = campaign_id(tmp_path / "x.sqlite")
    ids = {state.runs[r].path: r for r in state.runs}
    mine = _by_pair(_table(client, ids[run.resolve()])["rows"], cid)
    theirs = _by_pair(_table(client, ids[other.resolve()])["rows"], cid)
    for i in range(3):
        assert mine[(f"task-{i}", "oracle")] == {"mean": 1.0, "n": 1, "unit": 1.0, "gap": None}
        assert theirs[(f"task-{i}", "oracle")] == {"mean": 0.0, "n": 1, "unit": 0.0, "gap": None}
        assert mine[(f"task-{i}", "noop")] is None
    assert human_labels.campaign_runs(state.campaigns[cid].campaign) == {
        str(run.resolve()), str(other.resolve())
    }  # fmt: skip


@pytest.mark.slow
def test_in_a_browser_the_column_the_filter_and_the_live_redraw(run, tmp_path, browser, failure_shots):
    """The system Chromium on a served copy of the run with a campaign in its ``campaigns/`` folder:
    the people cells, the filter chosen in the form, and a retried result line redrawing the
    filtered table live with its people cells in place."""
    from tests.support.view_fixtures import serve, stop

    live = shutil.copytree(run, tmp_path / "live")
    path, _ = _absolute([live], live / "campaigns" / "if.sqlite")
    proc, url, _ = serve([live])
    try:
        page = browser.new_page()
        failure_shots.append(("run", page))
        rid = run_id(live)
        page.goto(f"{url}/r/{rid}")

        def cells():
            return {
                tuple(row[:2]): row[5]
                for row in page.eval_on_selector_all(
                    "#task-body tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
                )
            }

        header = page.eval_on_selector_all("#task-table thead th", "ths => ths.map(t => t.innerText)")
        assert header[5].startswith("people · absolute-") and len(header) == 8
        assert cells()[("task-1", "oracle")] == "2.00 (2)" and cells()[("task-2", "noop")] == "–"
        page.select_option("select[name=disagree]", campaign_id(path))
        page.click("#filters button[type=submit]")
        page.wait_for_url(f"**disagree={campaign_id(path)}**")
        assert set(cells()) == {("task-1", "oracle"), ("task-2", "oracle"), ("task-1", "noop")}
        results = live / "results.jsonl"
        row = next(
            json.loads(x) for x in results.read_text().splitlines() if '"task-0"' in x and '"oracle"' in x
        )
        row["scores"][JUDGE]["score"] = 0.0
        with results.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        page.wait_for_function("() => document.querySelectorAll('#task-body tr').length === 4", timeout=5000)
        drawn = page.eval_on_selector_all(
            "#task-body tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
        )
        assert all(len(r) == len(header) for r in drawn)
        assert {tuple(r[:2]): (r[4], r[5]) for r in drawn}[("task-0", "oracle")] == ("0.000", "4.00 (2)")
        page.screenshot(path=str(tmp_path / "people-column.png"), full_page=True)
        page.close()
    finally:
        stop(proc)
