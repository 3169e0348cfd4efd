"""The campaign page caches its statistics (issue 34, item 6): on a real small campaign served by
``arena view``'s app, a view of an unchanged store does not compute them again, and a new label (or a
gold label, a known-answer mark, a changed ``results.jsonl``) makes the next view compute them again
and show the new figures. Computations are counted by wrapping the statistics function, not timed.
"""

from __future__ import annotations

import os
import re

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from pptarena.label import stats as label_stats  # noqa: E402
from pptarena.label.adjudication import record_gold  # noqa: E402
from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.gold_items import mark_known  # noqa: E402
from pptarena.run.folder.rundir import RESULTS  # noqa: E402
from pptarena.view.app import ViewState, create_app  # noqa: E402
from pptarena.view.labelling import campaign_id  # noqa: E402
from tests.support.view_fixtures import small_run  # noqa: E402

BASE = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("view-campaign-stats-run"))


@pytest.fixture
def served(run, tmp_path, monkeypatch):
    """(client, campaign page URL, a second handle on the campaign file, computation counter)."""
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0,
                        out=tmp_path / "c.sqlite")  # fmt: skip
    calls = []
    real = label_stats.campaign_stats

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(label_stats, "campaign_stats", counted)
    state = ViewState([run], render=False, campaigns=[c.path])
    client = TestClient(create_app(state), base_url=BASE)
    yield client, f"/c/{campaign_id(c.path)}", c, calls
    c.close()


def _labelled(page: str, who: str) -> str:
    m = re.search(rf"<tr><td>{who}</td><td>(\d+)</td>", page)
    assert m, page[:2000]
    return m.group(1)


def test_an_unchanged_store_is_not_computed_again_and_a_new_label_refreshes_it(served):
    client, url, c, calls = served
    first = client.get(url)
    assert first.status_code == 200 and len(calls) == 1
    assert _labelled(first.text, "alice") == "0"
    for _ in range(3):
        again = client.get(url)
        assert again.status_code == 200 and again.text == first.text
    assert len(calls) == 1  # three views of an unchanged store: no computation
    # a label written through another connection of the same file (as the workbench or a CLI would)
    item = c.queue("alice")[0][0]
    c.append("alice", item, {"if": 3, "vq": 3, "damage": "no"}, 2.0)
    page = client.get(url)
    assert len(calls) == 2 and _labelled(page.text, "alice") == "1"
    client.get(url)
    assert len(calls) == 2
    # a new version of the same label (the count of current labels does not move) refreshes it too
    c.append("alice", item, {"if": 1, "vq": 3, "damage": "no"}, 2.0)
    client.get(url)
    assert len(calls) == 3


def test_gold_labels_known_answers_and_the_judges_scores_refresh_it(served, run):
    client, url, c, calls = served
    client.get(url)
    assert len(calls) == 1
    record_gold(c, 1, {"if": 4, "vq": 3, "damage": "no"}, note="", by="carol")
    client.get(url)
    assert len(calls) == 2
    mark_known(c, [(2, {"if": 0})], source="hand", by="carol")
    page = client.get(url)
    assert len(calls) == 3 and "Known-answer items: 1" in page.text
    client.get(url)
    assert len(calls) == 3
    results = run / RESULTS
    st = results.stat()
    os.utime(results, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    try:
        client.get(url)
        assert len(calls) == 4
    finally:
        os.utime(results, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_the_marker_is_equal_for_an_unchanged_store_and_moves_with_each_append(served):
    _, _, c, _ = served
    before = c.change_marker()
    assert c.change_marker() == before
    c.append("bob", c.queue("bob")[0][0], {"if": 2, "vq": 2, "damage": "no"}, None)
    after = c.change_marker()
    assert after != before and after[0] > (before[0] or 0) and after[1] == (before[1] or 0) + 1
