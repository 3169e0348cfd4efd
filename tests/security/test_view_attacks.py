"""``arena view`` under attack: every test performs the attack against a real server (a process
on a loopback port, raw HTTP where a client library would clean the request up) or the app.

Path traversal through the file route, a task id and an image name; missing and wrong tokens on a
non-loopback server; label writes from another origin or without the CSRF token; ``<script>`` in
deck text, instruction, model reply and annotator name; foreign ``Host`` headers; and ``kill -9``
of the server during a burst of label writes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections import Counter

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.store import Campaign  # noqa: E402
from pptarena.view.app import ViewState, create_app  # noqa: E402
from pptarena.view.runs import run_id  # noqa: E402
from tests.support.view_fixtures import MARKERS, login, serve, small_run, stop  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp("view-attacks")
    run = small_run(base)
    (base / "secret.txt").write_text("root:x:0:0 outside the run")
    (run / "escape.png").symlink_to(base / "secret.txt")  # a link out of the run folder
    (run / "page.html").write_text("<script>window.__pwned_f=1</script>")
    campaign, tokens = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0)
    proc, url, _ = serve([run])
    yield {"run": run, "url": url, "tokens": tokens, "campaign": campaign.path, "proc": proc}
    stop(proc)


def raw_get(url: str, path: str, host: str | None = None) -> tuple[int, str]:
    """A GET with the path sent byte for byte (no client-side ``..`` clean-up)."""
    hostport = url.split("//", 1)[1]
    name, port = hostport.rsplit(":", 1)
    with socket.create_connection((name, int(port)), timeout=30) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host or hostport}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head.decode("latin-1") + "\n\n" + body.decode("utf-8", "replace")


@pytest.mark.parametrize(
    "tail",
    [
        "../secret.txt",
        "..%2fsecret.txt",
        "%2e%2e/secret.txt",
        "%2e%2e%2fsecret.txt",
        "tasks/../../secret.txt",
        "/etc/passwd",
        "%2fetc%2fpasswd",
        "escape.png",
        "..%5csecret.txt",
    ],
)
def test_files_never_leave_the_run_folder(site, tail):
    rid = run_id(site["run"])
    status, text = raw_get(site["url"], f"/r/{rid}/f/{tail}")
    assert "outside the run" not in text and "root:x:0:0" not in text
    assert status in (400, 404)


def test_task_id_and_image_name_with_dot_dot(site):
    rid = run_id(site["run"])
    for path in (
        f"/r/{rid}/pair?task=../../secret.txt&agent=oracle",
        f"/r/{rid}/pair?task=..%2F..%2Fsecret.txt&agent=..%2F..",
        "/c/x/img/1/left/../../../secret.txt/1",
    ):
        status, text = raw_get(site["url"], path)
        assert status in (403, 404) and "outside the run" not in text


def test_image_route_refuses_names_outside_its_whitelist(site):
    client, cid, item, _ = login(site["url"], site["tokens"]["alice"])
    for path in (
        f"/c/{cid}/img/{item}/left/..%2F..%2Fsecret.txt/1",
        f"/c/{cid}/img/{item}/../original/1",
        f"/c/{cid}/img/{item}/left/original/..",
        f"/c/{cid}/img/999999/left/original/1",
    ):
        r = client.get(path)
        assert r.status_code in (403, 404) and "outside the run" not in r.text


def test_html_and_svg_in_a_run_are_never_served_as_pages(site):
    rid = run_id(site["run"])
    status, text = raw_get(site["url"], f"/r/{rid}/f/page.html")
    assert status == 200
    head = text.split("\n\n", 1)[0].lower()
    assert "content-type: application/octet-stream" in head and "attachment" in head
    assert "content-security-policy: default-src 'self'; script-src 'self';" in head


def test_every_response_forbids_inline_scripts(site):
    rid = run_id(site["run"])
    for path in ("/", f"/r/{rid}", "/static/view.js", "/nowhere", f"/r/{rid}/f/manifest.json"):
        status, text = raw_get(site["url"], path)
        head = text.split("\n\n", 1)[0].lower()
        csp = next(line for line in head.splitlines() if line.startswith("content-security-policy:"))
        assert (
            "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0]
        )
        assert "x-content-type-options: nosniff" in head and "referrer-policy: no-referrer" in head


def test_foreign_host_header_is_refused(site):
    status, _ = raw_get(site["url"], "/", host="attacker.example:80")
    assert status == 421


def test_script_in_instruction_deck_and_model_reply_is_escaped(site):
    rid = run_id(site["run"])
    status, text = raw_get(site["url"], f"/r/{rid}/pair?task=task-0&agent=oracle")
    assert status == 200
    assert "Replace the title with &lt;script&gt;" in text  # instruction
    assert "&lt;script&gt;window.__pwned_d=1" in text  # the deck's text in the edits
    assert "&lt;img src=x onerror" in text  # the judge's (model's) reply
    body = text.split("\n\n", 1)[1]
    assert body.count("<script") == 1 and '<script src="/static/view.js" defer></script>' in body
    for marker in MARKERS:
        assert f"<script>window.{marker}" not in body
    assert "<img src=x" not in body
    client, cid, _, _ = login(site["url"], site["tokens"]["bob"])
    for pos in range(6):  # the annotators' pages show the instruction too
        page = client.get(f"/c/{cid}/label", params={"pos": pos}).text
        assert page.count("<script") == 1 and "<script>window." not in page


def test_annotator_name_with_script_is_refused_and_imported_names_are_cleaned(site, tmp_path):
    from pptarena.label.campaign import parse_annotators
    from pptarena.label.exchange import import_label_studio
    from pptarena.label.store import CampaignError

    with pytest.raises(CampaignError):
        parse_annotators("<script>alert(1)</script>")
    campaign = Campaign.open(site["campaign"])
    item = next(iter(campaign.items.values()))
    export = [
        {
            "id": 1,
            "data": {"pptarena": {"item": item.id, "task_id": item.task_id}},
            "annotations": [
                {
                    "completed_by": "<script>alert(1)</script>",
                    "result": [
                        {"from_name": k, "type": "choices", "value": {"choices": [v]}}
                        for k, v in (("if", "1"), ("vq", "1"), ("damage", "no"))
                    ],
                }
            ],
        }
    ]
    (tmp_path / "ls.json").write_text(json.dumps(export))
    fresh, _ = new_campaign([site["run"]], protocol="absolute", annotators=["ann"], out=tmp_path / "c.sqlite")
    got = import_label_studio(fresh, tmp_path / "ls.json")
    (name,) = got["new_annotators"]
    assert "<" not in name and ">" not in name and got["added"] == 1


def _post(client, cid, item, csrf, **headers):
    return client.post(
        f"/c/{cid}/api/label",
        json={"item": item, "fields": {"if": 2, "vq": 2, "damage": "no"}, "seconds": 1.0},
        headers={"X-CSRF-Token": csrf, "Origin": str(client.base_url).rstrip("/"), **headers},
    )


def test_label_writes_need_session_csrf_and_same_origin(site):
    client, cid, item, csrf = login(site["url"], site["tokens"]["alice"])
    before = len(Campaign.open(site["campaign"]).history())
    assert _post(client, cid, item, csrf, Origin="http://evil.example").status_code == 403
    assert _post(client, cid, item, "wrong-token").status_code == 403
    r = client.post(
        f"/c/{cid}/api/label",
        json={"item": item, "fields": {"if": 2, "vq": 2, "damage": "no"}},
        headers={"Origin": str(client.base_url).rstrip("/")},
    )
    assert r.status_code == 403  # no CSRF header at all
    no_origin = client.post(
        f"/c/{cid}/api/label",
        json={"item": item, "fields": {"if": 2, "vq": 2, "damage": "no"}},
        headers={"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"},
    )
    assert no_origin.status_code == 403
    import httpx

    stranger = httpx.Client(base_url=site["url"])  # no session: a forged form post from elsewhere
    assert _post(stranger, cid, item, csrf).status_code == 403
    assert len(Campaign.open(site["campaign"]).history()) == before  # nothing was written
    ok = _post(client, cid, item, csrf)
    assert ok.status_code == 200 and len(Campaign.open(site["campaign"]).history()) == before + 1


def test_tokens_required_off_loopback(site):
    state = ViewState([site["run"]], host="0.0.0.0", render=False)
    app = create_app(state)
    c = TestClient(app, base_url="http://192.0.2.10:8000")
    rid = run_id(site["run"])
    for path in (
        "/",
        f"/r/{rid}",
        f"/r/{rid}/api/table",
        f"/r/{rid}/f/manifest.json",
        f"/r/{rid}/pair?task=task-1&agent=oracle",
    ):
        assert c.get(path).status_code == 403, path
    assert c.get("/login", params={"token": "not-a-token"}).status_code == 403
    assert c.get("/login", params={"token": ""}).status_code == 403
    # an annotator's link opens their queue, not the run pages (which name agents)
    c.get("/login", params={"token": site["tokens"]["alice"]})
    assert c.get(f"/r/{rid}").status_code == 403
    assert c.get("/c/" + next(iter(state.campaigns)) + "/label").status_code == 200
    admin = TestClient(app, base_url="http://192.0.2.10:8000")
    r = admin.get("/login", params={"token": state.access.admin_token}, follow_redirects=False)
    assert r.status_code == 303 and "httponly" in r.headers["set-cookie"].lower()
    assert "samesite=strict" in r.headers["set-cookie"].lower()
    assert admin.get(f"/r/{rid}").status_code == 200


def test_kill_9_during_a_burst_of_label_writes_loses_no_acknowledged_label(tmp_path):
    run = small_run(tmp_path)
    campaign, tokens = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0)
    proc, url, _ = serve([run])
    acknowledged: list[tuple[str, int, int]] = []  # (annotator, item, their version number of it)
    errors: list[str] = []
    try:
        sessions = [login(url, tokens[who]) for who in ("alice", "bob")]
        # the API names items by their public ids (the pages' ids), never by the file's numbers
        queue = {who: [campaign.public_id(i) for i, _ in campaign.queue(who)] for who in ("alice", "bob")}

        def burst(who, client, cid, csrf):
            k = 0
            while True:
                item = queue[who][k % len(queue[who])]
                try:
                    r = client.post(
                        f"/c/{cid}/api/label",
                        json={"item": item, "fields": {"if": k % 5, "vq": 1, "damage": "no"}, "seconds": 0.1},
                        headers={"X-CSRF-Token": csrf, "Origin": url},
                    )
                except Exception:  # noqa: BLE001 - the server died: stop
                    return
                if r.status_code != 200:
                    errors.append(r.text)
                    return
                acknowledged.append((who, r.json()["item"], r.json()["version"]))
                k += 1

        threads = [
            threading.Thread(target=burst, args=(who, c, cid, csrf))
            for who, (c, cid, _, csrf) in zip(("alice", "bob"), sessions, strict=True)
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(acknowledged) < 60 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)  # mid-burst: writes are in flight
        for t in threads:
            t.join(30)
    finally:
        stop(proc)
    assert not errors and len(acknowledged) >= 60
    # version n of an annotator's label of an item acknowledged: n versions of it are in the file
    kept = Counter((v.annotator, campaign.public_id(v.item)) for v in Campaign.open(campaign.path).history())
    assert all(n <= kept[(who, item)] for who, item, n in acknowledged)


def test_script_in_task_id_agent_and_error_of_a_result_line_is_escaped(site, tmp_path):
    import shutil

    run = shutil.copytree(site["run"], tmp_path / "run", symlinks=True)
    (run / "escape.png").unlink()
    row = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    hostile = {
        **row,
        "task_id": "<script>window.__pwned_t=1</script>",
        "agent": '"><img src=x onerror=window.__pwned_a=1>',
        "error": "<script>window.__pwned_e=1</script>",
        "status": "agent_error",
    }
    with (run / "results.jsonl").open("a") as fh:
        fh.write(json.dumps(hostile) + "\n")
    state = ViewState([run], render=False)
    c = TestClient(create_app(state), base_url="http://127.0.0.1:8000")
    rid = run_id(run)
    pages = [
        c.get(f"/r/{rid}").text,
        c.get(f"/r/{rid}", params={"status": "agent_error"}).text,
        c.get(f"/r/{rid}/pair", params={"task": hostile["task_id"], "agent": hostile["agent"]}).text,
        c.get("/").text,
    ]
    for page in pages:
        assert page.count("<script") == 1 and "<img src=x" not in page
    assert "&lt;script&gt;window.__pwned_t=1" in pages[1] and "&lt;script&gt;window.__pwned_e=1" in pages[2]
    api = c.get(f"/r/{rid}/api/since", params={"seq": 0}).json()  # JSON: the page inserts it as text
    assert any(r["task_id"] == hostile["task_id"] for r in api["rows"])
