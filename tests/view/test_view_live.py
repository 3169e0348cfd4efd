"""``arena view`` as a live server: run folders and campaigns made after it started are served
without a restart, a stale session is told to reopen its link, and each campaign has its own
session (two campaigns open in one browser). In process, through Starlette's test client."""

from __future__ import annotations

import re
import shutil
import time

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from pptarena.label.campaign import default_path, new_campaign  # noqa: E402
from pptarena.label.store import Campaign  # noqa: E402
from pptarena.view import app as view_app  # noqa: E402
from pptarena.view.app import ADMIN_SESSION_ENDED, RESCAN_EVERY, ViewState, create_app  # noqa: E402
from pptarena.view.labelling import campaign_id  # noqa: E402
from pptarena.view.runs import run_id  # noqa: E402
from pptarena.view.security import SESSION_ENDED, campaign_cookie  # noqa: E402
from tests.support.view_fixtures import small_run  # noqa: E402

BASE = "http://127.0.0.1:8000"
ABSOLUTE = {"if": 3, "vq": 4, "damage": "no"}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One real finished run, copied by each test that changes it."""
    return small_run(tmp_path_factory.mktemp("live-run"))


def _client(state: ViewState, base: str = BASE) -> TestClient:
    return TestClient(create_app(state), base_url=base)


def _campaign(run, name: str, annotators=("alice", "bob")):
    """A campaign where ``arena label new`` writes it (``RUN/campaigns/NAME.sqlite``)."""
    return new_campaign(
        [run], protocol="absolute", annotators=list(annotators), overlap=1.0, seed=1, name=name,
        out=default_path(run, name),
    )  # fmt: skip


def _item_and_csrf(page: str) -> tuple[int, str]:
    item = re.search(r'data-item="(\d+)"', page)
    csrf = re.search(r'data-csrf="([^"]+)"', page)
    assert item and csrf, page[:1500]
    return int(item.group(1)), csrf.group(1)


def _post(client: TestClient, cid: str, item: int, csrf: str, fields=ABSOLUTE):
    return client.post(
        f"/c/{cid}/api/label",
        json={"item": item, "fields": fields},
        headers={"X-CSRF-Token": csrf, "Origin": BASE},
    )


def _wait_for_next_scan(state: ViewState) -> None:
    time.sleep(state.scan_due_in() + 0.01)


# ----------------------------------------------------------------------------------- discovery


def test_run_and_campaign_made_after_start_are_served(made, tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    state = ViewState([root], render=False)
    c = _client(state)
    assert state.runs == {} and "late" not in c.get("/").text

    late = shutil.copytree(made, root / "late")
    _wait_for_next_scan(state)  # the runs page looks at most once a second
    page = c.get("/")
    assert page.status_code == 200 and "late" in page.text and run_id(late) in page.text
    assert c.get(f"/r/{run_id(late)}").status_code == 200

    campaign, tokens = _campaign(late, "fresh")
    cid = campaign_id(campaign.path)
    # the link printed by `arena label new` works at once (the login looks again on a miss)
    r = c.get("/login", params={"token": tokens["alice"]}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/c/{cid}/label"
    page = c.get(r.headers["location"])
    assert page.status_code == 200 and 'data-item="' in page.text
    item, csrf = _item_and_csrf(page.text)
    assert _post(c, cid, item, csrf).status_code == 200
    assert len(Campaign.open(campaign.path).history()) == 1
    _wait_for_next_scan(state)
    assert "fresh" in c.get("/").text  # listed on the runs page


def test_unknown_campaign_and_run_ids_are_looked_for_again(made, tmp_path):
    root = tmp_path / "runs"
    run = shutil.copytree(made, root / "one")
    state = ViewState([root], render=False)
    c = _client(state)
    c.get("/")  # a look now: the next one is a second away
    second = shutil.copytree(made, root / "two")
    campaign, _ = _campaign(run, "later")
    # a miss waits for the next allowed look instead of refusing a valid id
    assert c.get(f"/r/{run_id(second)}").status_code == 200
    assert c.get(f"/c/{campaign_id(campaign.path)}").status_code == 200  # the campaign page (local user)
    assert c.get("/r/000000000000").status_code == 404
    assert c.get("/c/000000000000/label").status_code == 404


def test_rescans_are_rate_limited_and_skip_a_file_that_did_not_open(made, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    shutil.copytree(made, root / "one")
    state = ViewState([root], render=False)
    c = _client(state)
    walks = []
    real = view_app.find_runs
    monkeypatch.setattr(view_app, "find_runs", lambda paths: walks.append(1) or real(paths))
    _wait_for_next_scan(state)
    started = time.monotonic()
    for _ in range(20):
        assert c.get("/").status_code == 200
    elapsed = time.monotonic() - started
    assert 1 <= len(walks) <= 1 + int(elapsed / RESCAN_EVERY)
    # a file in campaigns/ that is not (yet) a campaign is skipped, and not opened again until it changes
    bad = root / "one" / "campaigns" / "half.sqlite"
    bad.parent.mkdir(exist_ok=True)
    bad.write_bytes(b"not a database yet" * 100)
    opened = []
    real_open = view_app.ViewState._open_campaign
    monkeypatch.setattr(
        view_app.ViewState,
        "_open_campaign",
        lambda self, f, **kw: opened.append(f) or real_open(self, f, **kw),
    )
    for _ in range(2):
        _wait_for_next_scan(state)
        assert c.get("/").status_code == 200
    assert len(opened) == 1 and state.campaigns == {}


# ----------------------------------------------------------------------------------- stale sessions


def test_a_session_from_before_a_restart_is_told_to_reopen_the_link(made, tmp_path):
    run = shutil.copytree(made, tmp_path / "run")
    campaign, tokens = _campaign(run, "restart")
    cid = campaign_id(campaign.path)
    before = _client(ViewState([run], render=False))
    page = before.get("/login", params={"token": tokens["alice"]})
    item, csrf = _item_and_csrf(page.text)

    # the server restarts: sessions lived in its memory; the browser still holds the cookie
    after = _client(ViewState([run], render=False))
    for cookie in before.cookies.jar:
        after.cookies.jar.set_cookie(cookie)
    page = after.get(f"/c/{cid}/label")
    assert page.status_code == 403 and 'data-session-ended="1"' in page.text
    assert "Open the link you were given again" in page.text
    img = after.get(f"/c/{cid}/img/{item}/left/original/1")
    assert img.status_code == 403 and "Open the link you were given again" in img.text
    r = _post(after, cid, item, csrf)  # the open page saves a label
    assert r.status_code == 403 and r.json() == {"error": SESSION_ENDED, "session_ended": True}
    assert after.post(f"/c/{cid}/api/undo", json={"item": item}, headers={"X-CSRF-Token": csrf}).json()[
        "session_ended"
    ]
    assert Campaign.open(campaign.path).history() == []  # nothing written
    # opening the link again is the way back
    item, csrf = _item_and_csrf(after.get("/login", params={"token": tokens["alice"]}).text)
    assert _post(after, cid, item, csrf).status_code == 200


def test_a_page_of_an_earlier_session_cannot_write_and_says_so(made, tmp_path):
    run = shutil.copytree(made, tmp_path / "run")
    campaign, tokens = _campaign(run, "twice")
    cid = campaign_id(campaign.path)
    c = _client(ViewState([run], render=False))
    item, old_csrf = _item_and_csrf(c.get("/login", params={"token": tokens["alice"]}).text)
    _, new_csrf = _item_and_csrf(c.get("/login", params={"token": tokens["alice"]}).text)  # another tab
    r = _post(c, cid, item, old_csrf)
    assert r.status_code == 403 and r.json()["session_ended"] and "reload" in r.json()["error"]
    no_header = c.post(
        f"/c/{cid}/api/label", json={"item": item, "fields": ABSOLUTE}, headers={"Origin": BASE}
    )
    assert no_header.status_code == 403 and not no_header.json().get("session_ended")
    assert Campaign.open(campaign.path).history() == []
    assert _post(c, cid, item, new_csrf).status_code == 200


def test_stale_admin_session_off_loopback(made, tmp_path):
    run = shutil.copytree(made, tmp_path / "run")
    base = "http://192.0.2.10:8000"
    state = ViewState([run], host="0.0.0.0", render=False)
    before = _client(state, base)
    assert before.get("/login", params={"token": state.access.admin_token}).status_code == 200
    rid = run_id(run)
    assert before.get(f"/r/{rid}").status_code == 200
    after = _client(ViewState([run], host="0.0.0.0", render=False), base)
    for cookie in before.cookies.jar:
        after.cookies.jar.set_cookie(cookie)
    page = after.get(f"/r/{rid}")
    assert page.status_code == 403 and ADMIN_SESSION_ENDED in page.text
    api = after.get(f"/r/{rid}/api/since")
    assert api.status_code == 403 and api.json() == {"error": ADMIN_SESSION_ENDED, "session_ended": True}
    fresh = _client(ViewState([run], host="0.0.0.0", render=False), base)  # no cookie: not "ended"
    assert "session_ended" not in fresh.get("/").text and fresh.get(f"/r/{rid}/api/table").status_code == 403
    assert not fresh.get(f"/r/{rid}/api/table").json().get("session_ended")


# ----------------------------------------------------------------------------------- one session per campaign


def test_two_campaigns_open_in_one_browser(made, tmp_path):
    run = shutil.copytree(made, tmp_path / "run")
    one, tokens_one = _campaign(run, "one")
    two, tokens_two = _campaign(run, "two", annotators=("alice", "carol"))
    c1, c2 = campaign_id(one.path), campaign_id(two.path)
    browser = _client(ViewState([run], render=False))
    r = browser.get("/login", params={"token": tokens_one["alice"]}, follow_redirects=False)
    cookie = r.headers["set-cookie"].lower()
    assert f"{campaign_cookie(c1)}=" in cookie and f"path=/c/{c1}" in cookie
    assert "httponly" in cookie and "samesite=strict" in cookie
    item1, csrf1 = _item_and_csrf(browser.get(r.headers["location"]).text)
    item2, csrf2 = _item_and_csrf(browser.get("/login", params={"token": tokens_two["carol"]}).text)
    # the first campaign's session is still open after logging into the second, and both write
    assert browser.get(f"/c/{c1}/label").status_code == 200
    assert _post(browser, c1, item1, csrf1).status_code == 200
    assert _post(browser, c2, item2, csrf2).status_code == 200
    assert [v.annotator for v in Campaign.open(one.path).history()] == ["alice"]
    assert [v.annotator for v in Campaign.open(two.path).history()] == ["carol"]
    # campaign 1's CSRF token does not write to campaign 2 (each session has its own)
    assert _post(browser, c2, item2, csrf1).status_code == 403


def test_a_session_of_one_campaign_does_not_open_another(made, tmp_path):
    run = shutil.copytree(made, tmp_path / "run")
    one, tokens_one = _campaign(run, "one")
    two, _ = _campaign(run, "two")
    c1, c2 = campaign_id(one.path), campaign_id(two.path)
    state = ViewState([run], host="0.0.0.0", render=False)
    base = "http://192.0.2.10:8000"
    alice = _client(state, base)
    page = alice.get("/login", params={"token": tokens_one["alice"]})
    item, csrf = _item_and_csrf(page.text)
    sid = next(ck.value for ck in alice.cookies.jar if ck.name == campaign_cookie(c1))
    # the attack: campaign 1's session id sent as campaign 2's cookie, or under the admin's name
    for name in (campaign_cookie(c2), "arena_session"):
        forged = _client(state, base)
        forged.headers["cookie"] = f"{name}={sid}"
        assert forged.get(f"/c/{c2}/label").status_code == 403, name
        assert forged.get(f"/c/{c2}/img/{item}/left/original/1").status_code == 403, name
        assert forged.get(f"/c/{c2}").status_code == 403, name  # the campaign page names agents
        assert forged.get("/").status_code == 403, name
        r = forged.post(
            f"/c/{c2}/api/label",
            json={"item": item, "fields": ABSOLUTE},
            headers={"X-CSRF-Token": csrf, "Origin": base},
        )
        assert r.status_code == 403, name
    assert Campaign.open(two.path).history() == []
    # and the cookie itself is only sent to campaign 1's routes
    plain = alice.get(f"/c/{c2}/label")
    assert plain.status_code == 403 and "Open the link you were given again" not in plain.text
