"""Blind campaigns are blind by construction (issue 34, item 1), in process through Starlette's test
client on a real 4-agent run whose agents and judge have distinctive labels.

* An annotator's session reaches only the routes listed here (:data:`ANNOTATOR_ALLOWED`): the test
  walks the app's own route table, so a route added later is checked (and refused) without a change
  here, and it proves each refusal comes from the role (the admin gets the same request through).
* Nothing an annotator can get (pages, image URLs in them, the images, the JSON answers, the static
  files, the headers) names an agent or the judge, shows a score, or gives an item id that follows
  the (task, agent) order of the campaign's items.
* The pairwise history is in left/right terms as that annotator saw the item, and version numbers
  count that annotator's versions only.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.routing import Mount, Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.store import ITEM_KEY, Campaign  # noqa: E402
from pptarena.run.configuration.config import load_config  # noqa: E402
from pptarena.run.configuration.registry import get_registry, reset_registry  # noqa: E402
from pptarena.run.runner import Runner  # noqa: E402
from pptarena.view.app import ViewState, create_app  # noqa: E402
from pptarena.view.labelling import campaign_id  # noqa: E402
from pptarena.view.runs import run_id  # noqa: E402
from pptarena.view.security import COOKIE, campaign_cookie  # noqa: E402
from tests.support.config import use, write_run_config  # noqa: E402
from tests.support.view_fixtures import make_dataset  # noqa: E402

#: agent labels no page would hold by chance (two oracles and two noops, so quality tells nothing)
AGENTS = ("Zorvexa", "Quillonet", "Brakmundo", "Vetchnyra")
JUDGE = "Plumbagor"
#: what an annotator's session may reach, by route name; every other route must answer 403
ANNOTATOR_ALLOWED = {
    "login", "report_css", "static", "instructions_page", "label_page", "item_image", "label_api", "undo_api",
}  # fmt: skip
OFF_LOOPBACK = "http://192.0.2.10:8000"
LOOPBACK = "http://127.0.0.1:8000"
#: words of the judges' output that have no business in a blind page
SCORE_WORDS = (
    '"score"',
    "if_score",
    "vq_score",
    '"scores"',
    "disagreement",
    "verdict",
    "structural",
    "rubric",
)
#: the campaigns' instructions page names every agent and the judge (as a careless author might):
#: a blind campaign must show none of them
INSTRUCTIONS = (
    "# How to label\n\nCompare the edited deck with the target. Ignore who made it ("
    + ", ".join(AGENTS)
    + f"); the {JUDGE} judge's opinion is not shown.\n\n## Worked example\n\n"
    + f"`{AGENTS[0]}` did everything asked: instruction following 4.\n"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A 4-agent run (3 tasks) with a render of every slide shown, and blind campaigns of both
    protocols (two annotators, every item shared)."""
    from PIL import Image

    from pptarena.render import slide_file_name
    from pptarena.run.folder.rundir import RENDERS, RunDir

    tmp = tmp_path_factory.mktemp("blind")
    make_dataset(tmp / "data", 3)
    agents = [use(kind, label=label) for kind, label in zip(("oracle", "noop") * 2, AGENTS, strict=True)]
    config = write_run_config(
        tmp / "run.toml",
        dataset=use("folder", root="data"),
        agents=agents,
        judges=[use("structural", label=JUDGE)],
    )
    reset_registry()
    run = tmp / "run"
    Runner(load_config(config, get_registry()), get_registry(), run, jobs=2, quiet=True).run()
    for agent in AGENTS:
        for task in range(3):
            folder = RunDir(run).attempt(agent, f"task-{task}", 1)
            assert folder.is_dir(), folder
            for role in ("original", "prediction", "target"):
                (folder / RENDERS / role).mkdir(parents=True, exist_ok=True)
                Image.new("RGB", (16, 9), "white").save(folder / RENDERS / role / slide_file_name(1))
    made = {}
    for protocol in ("absolute", "pairwise"):
        campaign, tokens = new_campaign(
            [run], protocol=protocol, annotators=["ann1", "ann2"], overlap=1.0, seed=7,
            out=tmp / f"{protocol}.sqlite", instructions=INSTRUCTIONS,
        )  # fmt: skip
        made[protocol] = (campaign, tokens)
    return {"run": run, "campaigns": made, "tmp": tmp}


def _state(site, host: str = "0.0.0.0") -> ViewState:
    files = [c.path for c, _ in site["campaigns"].values()]
    return ViewState([site["run"]], host=host, render=False, campaigns=files)


def _starlette(app):
    """The Starlette app inside the middlewares ``create_app`` wraps it in."""
    while not hasattr(app, "routes"):
        app = app.app
    return app


def _login(app, base: str, token: str) -> tuple[TestClient, str, str]:
    """An annotator's client after following their link: (client, session id, campaign id)."""
    client = TestClient(app, base_url=base)
    r = client.get("/login", params={"token": token}, follow_redirects=False)
    assert r.status_code == 303, r.text
    cid = r.headers["location"].split("/")[2]
    sid = next(ck.value for ck in client.cookies.jar if ck.name == campaign_cookie(cid))
    return client, sid, cid


def _csrf(page: str) -> tuple[int, str]:
    item = re.search(r'data-item="(\d+)"', page)
    csrf = re.search(r'data-csrf="([^"]+)"', page)
    assert item and csrf, page[:1500]
    return int(item.group(1)), csrf.group(1)


# ----------------------------------------------------------------------------------- the route table


def _request_for(route, name: str, *, rid: str, cid: str, item: int, token: str, agent: str):
    """``(method, path, query, json body)`` of a request every route would serve to someone allowed."""
    values = {"rid": rid, "cid": cid, "item": str(item), "side": "left", "role": "original", "n": "1"}
    values["path"] = "results.jsonl"
    if isinstance(route, Mount):
        return "GET", route.path + "/view.js", {}, None
    path = route.path_format
    for key in route.param_convertors:
        path = path.replace("{" + key + "}", values.get(key, "x"))
    query = {
        "login": {"token": token},
        "pair_page": {"task": "task-1", "agent": agent},
        "compare_page": {"a": rid, "b": rid, "task": "task-1", "agent_a": agent, "agent_b": agent},
    }.get(name, {})
    methods = route.methods or {"GET"}
    if "POST" in methods:
        return "POST", path, query, {"item": item, "fields": {"if": 2, "vq": 3, "damage": "no"}}
    return "GET", path, query, None


@pytest.mark.parametrize("base", [OFF_LOOPBACK, LOOPBACK])
def test_an_annotator_session_reaches_only_the_allowed_routes_of_its_campaign(site, base):
    state = _state(site, host="0.0.0.0" if base == OFF_LOOPBACK else "127.0.0.1")
    app = create_app(state)
    routes = _starlette(app).routes
    campaign, tokens = site["campaigns"]["absolute"]
    other_cid = campaign_id(site["campaigns"]["pairwise"][0].path)
    client, sid, cid = _login(app, base, tokens["ann1"])
    assert cid == campaign_id(campaign.path)
    _, csrf = _csrf(client.get(f"/c/{cid}/label", params={"pos": 0}).text)
    item = campaign.public_id(campaign.queue("ann1")[0][0])
    admin = TestClient(app, base_url=base)
    if state.access.admin_token:
        admin.get("/login", params={"token": state.access.admin_token})
    rid = run_id(site["run"])
    names = set()
    for route in routes:
        assert isinstance(route, Route | Mount), route
        name = route.name
        names.add(name)
        for target_cid in (cid, other_cid) if "{cid}" in route.path else (cid,):
            method, path, query, body = _request_for(
                route, name, rid=rid, cid=target_cid, item=item, token=tokens["ann1"], agent=AGENTS[0]
            )
            own = name in ANNOTATOR_ALLOWED and target_cid == cid
            # the session's cookie as the browser sends it, and the same session id under other names
            forged = [campaign_cookie(target_cid), "arena_session_c_x", campaign_cookie(cid), COOKIE]
            for cookie_name in [campaign_cookie(cid)] if own else forged:
                probe = TestClient(app, base_url=base)  # no cookie jar of its own: only this cookie
                headers = {"cookie": f"{cookie_name}={sid}", "X-CSRF-Token": csrf, "Origin": base}
                r = probe.request(
                    method, path, params=query, json=body, headers=headers, follow_redirects=False
                )
                if own:
                    assert r.status_code in (200, 303, 400), (name, path, r.status_code, r.text[:300])
                else:
                    assert r.status_code == 403, (name, path, cookie_name, r.status_code)
            if name not in ANNOTATOR_ALLOWED:
                # the refusal comes from the role: the admin's session gets the very same request through
                r = admin.request(
                    method, path, params=query, json=body, headers={"Origin": base}, follow_redirects=False
                )
                if name == "adjudicate_post":  # a form write: past the role, it stops at its own CSRF check
                    assert r.status_code != 403 or "CSRF token" in r.text, (name, path, r.text[-600:])
                else:
                    assert r.status_code != 403, (name, path, r.text[:300])
    # the table holds the routes of the issue (a renamed route would silently leave the allow-list)
    assert ANNOTATOR_ALLOWED <= names and {"runs_page", "run_page", "table_api", "campaign_page"} <= names


def test_label_pages_do_not_link_to_run_pages(site):
    app = create_app(_state(site, host="127.0.0.1"))
    for protocol in ("absolute", "pairwise"):
        client, _, cid = _login(app, LOOPBACK, site["campaigns"][protocol][1]["ann1"])
        first = client.get(f"/c/{cid}/label")  # the instructions come first, then the queue
        assert first.url.path == f"/c/{cid}/instructions", first.url
        for page in (first.text, client.get(f"/c/{cid}/label", params={"pos": 0}).text):
            header = page.split("<header", 1)[1].split("</header>", 1)[0]
            assert "href" not in header, header
            assert 'href="/"' not in page and "/r/" not in page and f'href="/c/{cid}"' not in page


# ----------------------------------------------------------------------------------- nothing leaks


def _leaks(text: str) -> list[str]:
    low = text.lower()
    found = [name for name in (*AGENTS, JUDGE) if name.lower() in low]
    return found + [w for w in SCORE_WORDS if w in low]


@pytest.mark.parametrize("protocol", ["absolute", "pairwise"])
def test_nothing_an_annotator_gets_names_an_agent_a_judge_a_score_or_the_item_order(site, protocol):
    campaign, tokens = site["campaigns"][protocol]
    internal = set(campaign.items)
    state = _state(site)
    app = create_app(state)
    responses = []  # (what, headers + body as text)
    seen_ids: dict[str, set[int]] = {}

    def keep(what, r):
        assert r.status_code in (200, 303, 400), (what, r.status_code, r.text[:300])
        head = "\n".join(f"{k}: {v}" for k, v in r.headers.items())
        body = r.content.decode("latin-1")  # images too: bytes as text
        responses.append((what, head + "\n" + body))
        return r

    for who in ("ann1", "ann2"):
        client = TestClient(app, base_url=OFF_LOOPBACK)
        r = keep("login", client.get("/login", params={"token": tokens[who]}, follow_redirects=False))
        cid = r.headers["location"].split("/")[2]
        ids = seen_ids.setdefault(who, set())
        for asset in ("/static/view.js", "/static/view.css", "/static/report.css"):
            keep(asset, client.get(asset))
        first = keep("first page", client.get(f"/c/{cid}/label", follow_redirects=False))
        assert first.status_code == 303 and first.headers["location"] == f"/c/{cid}/instructions"
        shown = keep("instructions", client.get(f"/c/{cid}/instructions")).text
        assert "Worked example" in shown and "[hidden]" in shown, shown[:2000]
        keep("instructions again", client.get(f"/c/{cid}/instructions", params={"pos": 1}))
        queue = campaign.queue(who)
        for pos in range(len(queue)):
            page = keep(f"{who} page {pos}", client.get(f"/c/{cid}/label", params={"pos": pos})).text
            item, csrf = _csrf(page)
            ids.add(item)
            srcs = re.findall(r'src="(/c/[^"]+)"', page)
            assert srcs, page[:2000]  # every item shows slides here: the image URLs are checked too
            for src in srcs:
                m = re.fullmatch(rf"/c/{cid}/img/(\d+)/(left|right)/(original|prediction|target)/\d+", src)
                assert m, src
                ids.add(int(m.group(1)))
                img = keep(src, client.get(src))
                assert img.headers["content-type"] == "image/png"
            fields = (
                {"if": pos % 5, "vq": 2, "damage": "no"} if protocol == "absolute" else {"choice": "left"}
            )
            headers = {"X-CSRF-Token": csrf, "Origin": OFF_LOOPBACK}
            for _ in range(2):
                r = keep(
                    "label",
                    client.post(
                        f"/c/{cid}/api/label", json={"item": item, "fields": fields}, headers=headers
                    ),
                )
                ids.add(r.json()["item"])
            r = keep("undo", client.post(f"/c/{cid}/api/undo", json={"item": item}, headers=headers))
            ids.add(r.json()["item"])
            keep(f"{who} page {pos} again", client.get(f"/c/{cid}/label", params={"pos": pos}))
        # an item id the page never gave (the file's own number) is refused without a word about it
        number = queue[0][0]
        r = keep(
            "internal id",
            client.post(f"/c/{cid}/api/label", json={"item": number, "fields": fields}, headers=headers),
        )
        assert r.status_code == 400 and str(number) not in r.json()["error"]

    # the static files are the same code for everyone (the run pages' script reads scores): names only
    leaks = [
        (what, found)
        for what, text in responses
        if (found := [w for w in _leaks(text) if not what.startswith("/static/") or w not in SCORE_WORDS])
    ]
    assert not leaks, leaks[:5]
    for who, ids in seen_ids.items():
        # the ids are the campaign's public ids, none of them an item number, in no order of the items
        assert ids == {campaign.public_id(i) for i, _ in campaign.queue(who)}, who
        assert not ids & internal and min(ids) >= 10**14
    by_number = [campaign.public_id(i) for i in sorted(internal)]
    assert by_number != sorted(by_number)
    agents = {campaign.public_id(i): campaign.items[i].agent for i in internal}
    assert any(
        len({a for p, a in agents.items() if p % 4 == k}) > 1 for k in range(4)
    )  # id mod 4 says nothing


def test_public_ids_are_random_per_campaign_and_old_files_get_theirs_on_open(site, tmp_path):
    first, _ = site["campaigns"]["absolute"]
    again, _ = new_campaign(
        [site["run"]],
        protocol="absolute",
        annotators=["ann1", "ann2"],
        overlap=1.0,
        seed=7,
        out=tmp_path / "again.sqlite",
    )
    assert [again.items[i] for i in again.items] == [first.items[i] for i in first.items]  # the same items
    assert {first.public_id(i) for i in first.items}.isdisjoint(again.public_id(i) for i in again.items)
    # a campaign file made before public ids: the key is added when it is opened, then kept
    old = tmp_path / "old.sqlite"
    again.pack(old)
    conn = sqlite3.connect(old)
    conn.execute("DELETE FROM meta WHERE key=?", (ITEM_KEY,))
    conn.commit()
    conn.close()
    with Campaign.open(old) as opened:
        ids = {i: opened.public_id(i) for i in opened.items}
        assert opened.item_for_public(str(ids[1])) == 1 and opened.item_for_public(1) is None
    conn = sqlite3.connect(old)
    (stored,) = conn.execute("SELECT value FROM meta WHERE key=?", (ITEM_KEY,)).fetchone()
    conn.close()
    assert len(json.loads(stored)) == 64
    with Campaign.open(old) as reopened:
        assert {i: reopened.public_id(i) for i in reopened.items} == ids
    assert ids != {i: again.public_id(i) for i in again.items}


# ----------------------------------------------------------------------------------- history and versions


def test_pairwise_history_is_left_right_as_seen_and_versions_count_the_annotators_own(site, tmp_path):
    campaign, tokens = new_campaign(
        [site["run"]], protocol="pairwise", annotators=["ann1", "ann2"], overlap=1.0, seed=7,
        out=tmp_path / "fresh.sqlite",
    )  # fmt: skip
    app = create_app(ViewState([site["run"]], host="0.0.0.0", render=False, campaigns=[campaign.path]))
    ann1, _, cid = _login(app, OFF_LOOPBACK, tokens["ann1"])
    ann2, _, _ = _login(app, OFF_LOOPBACK, tokens["ann2"])
    # an item ann1 sees swapped (B on the left), so its stored letters differ from its screen sides
    pos, (number, swapped) = next((p, q) for p, q in enumerate(campaign.queue("ann1")) if q[1])
    item, csrf1 = _csrf(ann1.get(f"/c/{cid}/label", params={"pos": pos}).text)
    assert item == campaign.public_id(number)
    h1 = {"X-CSRF-Token": csrf1, "Origin": OFF_LOOPBACK}
    versions = []
    for choice in ("left", "right", "tie", "left"):
        r = ann1.post(f"/c/{cid}/api/label", json={"item": item, "fields": {"choice": choice}}, headers=h1)
        assert r.status_code == 200, r.text
        versions.append(r.json()["version"])
    undo = ann1.post(f"/c/{cid}/api/undo", json={"item": item}, headers=h1).json()
    assert versions == [1, 2, 3, 4] and undo["version"] == 5 and undo["fields"] == {"choice": "tie"}
    stored = [v.fields["choice"] for v in campaign.history("ann1", number)]
    assert stored == ["b", "a", "tie", "b", "tie"]  # swapped: left is the campaign's B
    page = ann1.get(f"/c/{cid}/label", params={"pos": pos}).text
    history = page.split('id="history"', 1)[1].split("</ol>", 1)[0]
    shown = re.findall(r"&#34;choice&#34;: &#34;(\w+)&#34;|\"choice\": \"(\w+)\"", history)
    assert [a or b for a, b in shown] == ["left", "right", "tie", "left", "tie"], history
    assert "undo of version 4" in history
    for letter in ("a", "b"):
        assert f"&#34;{letter}&#34;" not in history and f'"{letter}"' not in history
    # the campaign's own letters are not an answer a page can send
    bad = ann1.post(f"/c/{cid}/api/label", json={"item": item, "fields": {"choice": "a"}}, headers=h1)
    assert bad.status_code == 400
    # ann2's first label of the same item is their version 1, whatever ann1 wrote
    pos2 = next(p for p, (n, _) in enumerate(campaign.queue("ann2")) if n == number)
    item2, csrf2 = _csrf(ann2.get(f"/c/{cid}/label", params={"pos": pos2}).text)
    assert item2 == item
    r = ann2.post(
        f"/c/{cid}/api/label", json={"item": item, "fields": {"choice": "left"}},
        headers={"X-CSRF-Token": csrf2, "Origin": OFF_LOOPBACK},
    )  # fmt: skip
    assert r.json() == {"version": 1, "item": item}
    _ = swapped
