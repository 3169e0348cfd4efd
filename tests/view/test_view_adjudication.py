"""The adjudicator page of ``arena view`` on a real small campaign where two annotators disagree:
the local admin sees the labels side by side and records a gold label through the form (CSRF and
same-origin checked); an annotator's session gets 403 on the page and the form; on a non-loopback
server only the admin's session opens it; known-answer items and gold labels change nothing an
annotator can get.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.applications import Starlette  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from pptarena.label.adjudication import current_gold, gold_history  # noqa: E402
from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.gold_items import (  # noqa: E402
    accuracy,
    add_known_items,
    new_oracle_noop_items,
    seed_oracle_noop,
)
from pptarena.label.store import Campaign  # noqa: E402
from pptarena.view import adjudication  # noqa: E402
from pptarena.view.app import ViewState, create_app  # noqa: E402
from pptarena.view.labelling import campaign_id  # noqa: E402
from pptarena.view.security import Session, campaign_cookie  # noqa: E402
from tests.support.view_fixtures import small_run  # noqa: E402

BASE = "http://127.0.0.1:8000"
ORIGIN = {"Origin": BASE}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("view-adjudication-run"))


@pytest.fixture
def campaign(run, tmp_path):
    """Alice and Bob disagree on IF of task-1/oracle (4 vs 1); returns (file, tokens, that item)."""
    c, tokens = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0,
                             out=tmp_path / "c.sqlite")  # fmt: skip
    target = next(i for i, it in c.items.items() if (it.task_id, it.agent) == ("task-1", "oracle"))
    for item_id, it in c.items.items():
        level = 4 if it.agent == "oracle" else 0
        c.append("alice", item_id, {"if": level, "vq": 3, "damage": "no"}, 1.0)
        c.append("bob", item_id, {"if": 1 if item_id == target else level, "vq": 3, "damage": "no"}, 1.0)
    c.close()
    return tmp_path / "c.sqlite", tokens, target


@pytest.fixture
def app_with_adjudication():
    """``create_app`` (which mounts the adjudication routes) over the run and a campaign file."""

    def make(run, path, **kw):
        state = ViewState([run], render=False, campaigns=[path], **kw)
        return state, TestClient(create_app(state), base_url=BASE)

    return make


def _csrf(html):
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def test_local_admin_sees_the_disagreement_and_records_a_gold_label(run, campaign, app_with_adjudication):
    path, _, target = campaign
    state, client = app_with_adjudication(run, path)
    cid = campaign_id(path)
    page = client.get(f"/c/{cid}/adjudicate")
    assert page.status_code == 200, page.text
    sections = re.findall(r'<section class="adjudicate-item" id="item-(\d+)"', page.text)
    assert sections == [str(target)]  # the one item they disagree on
    block = page.text.split(f'id="item-{target}"')[1]
    assert "<th>alice</th><th>bob</th>" in block
    assert re.search(r"<th>if</th><td>4</td><td>1</td>", block)
    everything = client.get(f"/c/{cid}/adjudicate?all=1&sort=item")
    assert len(re.findall(r'class="adjudicate-item"', everything.text)) == 6
    form = {"csrf": _csrf(page.text), "item": str(target), "if": "3", "vq": "3", "damage": "no",
            "note": "font changed", "by": "carol", "action": "record"}  # fmt: skip
    got = client.post(f"/c/{cid}/adjudicate", data=form, headers=ORIGIN, follow_redirects=False)
    assert got.status_code == 303, got.text
    assert got.headers["location"] == f"/c/{cid}/adjudicate?saved={target}#item-{target}"
    again = client.post(f"/c/{cid}/adjudicate", data={**form, "if": "4", "note": "exact after all"},
                        headers=ORIGIN, follow_redirects=False)  # fmt: skip
    assert again.status_code == 303
    shown = client.get(got.headers["location"]).text
    assert "gold label saved" in shown and "Gold label versions (2)" in shown and "exact after all" in shown
    c = state.campaigns[cid].campaign
    assert current_gold(c)[target].fields == {"if": 4, "vq": 3, "damage": "no"}
    assert [(g.adjudicator, g.note) for g in gold_history(c, target)] == [
        ("carol", "font changed"),
        ("carol", "exact after all"),
    ]
    bad = client.post(
        f"/c/{cid}/adjudicate", data={**form, "if": "7"}, headers=ORIGIN, follow_redirects=False
    )
    assert bad.status_code == 400 and "not recorded" in bad.text
    withdrawn = client.post(f"/c/{cid}/adjudicate", data={**form, "action": "clear"}, headers=ORIGIN,
                            follow_redirects=False)  # fmt: skip
    assert withdrawn.status_code == 303 and target not in current_gold(c)
    with Campaign.open(path) as reopened:
        assert len(gold_history(reopened, target)) == 3


def test_writes_need_the_pages_csrf_token_and_the_same_origin(run, campaign, app_with_adjudication):
    path, _, target = campaign
    state, client = app_with_adjudication(run, path)
    cid = campaign_id(path)
    token = _csrf(client.get(f"/c/{cid}/adjudicate").text)
    form = {"item": str(target), "if": "3", "vq": "3", "damage": "no", "by": "carol"}
    assert client.post(f"/c/{cid}/adjudicate", data=form, headers=ORIGIN).status_code == 403
    wrong = client.post(f"/c/{cid}/adjudicate", data={**form, "csrf": "guess"}, headers=ORIGIN)
    assert wrong.status_code == 403
    foreign = client.post(
        f"/c/{cid}/adjudicate", data={**form, "csrf": token}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    # a sandboxed frame or a data: page of another site posts with Origin: null; its browser says
    # cross-site (or nothing, in an old browser): refused, even with a token read from the page
    for sent in ({"Origin": "null", "Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}):
        framed = client.post(f"/c/{cid}/adjudicate", data={**form, "csrf": token}, headers=sent)
        assert framed.status_code == 403, sent
    assert gold_history(state.campaigns[cid].campaign) == []
    # the page's own form, as Chromium sends it under Referrer-Policy: no-referrer
    own = client.post(
        f"/c/{cid}/adjudicate",
        data={**form, "csrf": token},
        headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert own.status_code == 303
    assert len(gold_history(state.campaigns[cid].campaign)) == 1


def test_annotators_get_403_on_the_page_and_the_form(run, campaign, app_with_adjudication):
    path, tokens, target = campaign
    state, admin = app_with_adjudication(run, path)
    cid = campaign_id(path)
    token = _csrf(admin.get(f"/c/{cid}/adjudicate").text)  # even with a valid token of the admin's page
    annotator = TestClient(admin.app, base_url=BASE)
    assert (
        annotator.get("/login", params={"token": tokens["alice"]}, follow_redirects=False).status_code == 303
    )
    assert annotator.get(f"/c/{cid}/label").status_code == 200  # her own queue opens
    page = annotator.get(f"/c/{cid}/adjudicate")
    assert page.status_code == 403 and "alice" not in page.text and "oracle" not in page.text
    form = {"csrf": token, "item": str(target), "if": "0", "vq": "0", "damage": "no", "by": "alice"}
    assert annotator.post(f"/c/{cid}/adjudicate", data=form, headers=ORIGIN).status_code == 403
    assert gold_history(state.campaigns[cid].campaign) == []


def test_the_routes_refuse_annotators_on_their_own(run, campaign):
    """Without the app's guards around them: the routes' own check refuses an annotator's session."""
    path, _, target = campaign
    state = ViewState([run], render=False, campaigns=[path])
    app = Starlette(routes=adjudication.routes())
    app.state.view = state
    cid = campaign_id(path)
    client = TestClient(app, base_url=BASE)
    assert client.get(f"/c/{cid}/adjudicate").status_code == 200  # the local admin
    sid = state.access.open_session(Session("annotator", campaign=cid, annotator="bob"))
    client.cookies.set(campaign_cookie(cid), sid)
    assert client.get(f"/c/{cid}/adjudicate").status_code == 403
    form = {"csrf": adjudication.csrf_token(cid, None), "item": str(target), "if": "1", "vq": "1",
            "damage": "no", "by": "bob"}  # fmt: skip
    assert client.post(f"/c/{cid}/adjudicate", data=form, headers=ORIGIN).status_code == 403
    client.cookies.set(campaign_cookie(cid), "unknown-after-a-restart")
    assert client.get(f"/c/{cid}/adjudicate").status_code == 403
    assert gold_history(state.campaigns[cid].campaign) == []


def test_a_non_loopback_server_opens_it_to_the_admin_session_only(run, campaign, app_with_adjudication):
    path, _, target = campaign
    state, client = app_with_adjudication(run, path, host="0.0.0.0", admin_token="admin-secret")
    cid = campaign_id(path)
    assert client.get(f"/c/{cid}/adjudicate").status_code == 403
    assert client.get("/login", params={"token": "admin-secret"}, follow_redirects=False).status_code == 303
    page = client.get(f"/c/{cid}/adjudicate")
    assert page.status_code == 200
    form = {"csrf": _csrf(page.text), "item": str(target), "if": "2", "vq": "3", "damage": "no", "by": "root"}
    assert (
        client.post(f"/c/{cid}/adjudicate", data=form, headers=ORIGIN, follow_redirects=False).status_code
        == 303
    )
    assert current_gold(state.campaigns[cid].campaign)[target].adjudicator == "root"


def test_known_answer_items_and_gold_labels_change_nothing_an_annotator_gets(
    run, campaign, app_with_adjudication
):
    path, tokens, target = campaign
    state, admin = app_with_adjudication(run, path)
    cid = campaign_id(path)
    annotator = TestClient(admin.app, base_url=BASE)
    annotator.get("/login", params={"token": tokens["bob"]}, follow_redirects=False)
    c = state.campaigns[cid].campaign
    positions = range(len(c.queue("bob")))

    def pages():
        return [annotator.get(f"/c/{cid}/label", params={"pos": p}).text for p in positions]

    before = pages()
    seed_oracle_noop(c, 6, by="carol")  # every item of this campaign is an oracle or no-op attempt
    page = admin.get(f"/c/{cid}/adjudicate").text
    assert "known-answer item" in page  # the admin is told
    form = {"csrf": _csrf(page), "item": str(target), "if": "4", "vq": "3", "damage": "no", "by": "carol"}
    admin.post(f"/c/{cid}/adjudicate", headers=ORIGIN, data=form)
    assert target in current_gold(c)
    assert pages() == before


def test_the_campaign_page_links_to_its_adjudication_page(run, campaign, app_with_adjudication):
    """The app mounts the page, and the campaign page links to it."""
    path, _tokens, _target = campaign
    _state, client = app_with_adjudication(run, path)
    cid = campaign_id(path)
    (link,) = re.findall(r'href="(/c/[^"]+/adjudicate)"', client.get(f"/c/{cid}").text)
    assert link == f"/c/{cid}/adjudicate" and "Adjudicat" in client.get(link).text


def test_new_known_answer_items_added_while_serving_look_like_every_other_item(
    run, campaign, app_with_adjudication, tmp_path_factory
):
    """Items added by another process (``arena label seed --add-…``) while the server runs: the
    served campaign picks them up, and an annotator's pages for them have the same shape as any
    other item's; their labels count in the known-answer accuracy."""
    path, tokens, _ = campaign
    control = small_run(tmp_path_factory.mktemp("view-known-control"), count=2)
    state, admin = app_with_adjudication(run, path)
    cid = campaign_id(path)
    annotator = TestClient(admin.app, base_url=BASE)
    annotator.get("/login", params={"token": tokens["bob"]}, follow_redirects=False)
    served = state.campaigns[cid].campaign
    old_len = len(served.queue("bob"))
    with Campaign.open(path) as other:  # another process's handle on the same file
        added = add_known_items(other, new_oracle_noop_items(other, 2, runs=[control], seed=1),
                                seed=1, source="new item, test", by="carol")  # fmt: skip
    shapes = {}
    for pos in range(old_len + 2):
        page = annotator.get(f"/c/{cid}/label", params={"pos": pos})
        assert page.status_code == 200, page.text[:500]
        public = int(re.search(r'data-item="(\d+)"', page.text).group(1))
        number = served.item_for_public(public)
        assert number is not None and 10**14 <= public < 10**15
        ids = set(re.findall(r'id="([^"]+)"', page.text)) - {
            "first-open",
            "prev-item",
            "next-item",
            "queue-done",
        }
        data = tuple(re.findall(r" (data-[a-z-]+)=", page.text))
        shapes[number] = (frozenset(ids), data)
        assert "known" not in page.text.lower()
        if number in added:
            csrf = re.search(r'data-csrf="([^"]+)"', page.text).group(1)
            r = annotator.post(f"/c/{cid}/api/label", json={"item": public, "fields": {"if": 4, "vq": 3,
                               "damage": "no"}}, headers={"X-CSRF-Token": csrf, **ORIGIN})  # fmt: skip
            assert r.status_code == 200, r.text
    assert set(added) <= set(shapes)
    assert len({shapes[n] for n in shapes}) == 1  # one shape for the new items and the others
    got = accuracy(served)["annotators"]["bob"]
    assert got["queued"] == 2 and got["labelled"] == 2
    assert got["right"] == sum(served.items[n].agent == "oracle" for n in added)
    assert "· 2 known-answer item(s)</p>" in admin.get(f"/c/{cid}/adjudicate").text  # the admin is told
