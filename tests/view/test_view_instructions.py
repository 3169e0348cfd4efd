"""The instructions page of a campaign in ``arena view`` (issue 34, item 4), in process on a real small
run: an annotator sees it before the first item of their queue, reaches it from every label page (a
link in the bar, Alt+H), sees it again before their next item when it changed, and never sees a raw
HTML tag of the file nor, in a blind campaign, an agent's name; who is not the campaign's annotator
(another campaign's, a stranger off loopback) cannot open it.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from pptarena.label.campaign import new_campaign  # noqa: E402
from pptarena.label.instructions import set_instructions  # noqa: E402
from pptarena.view.app import ViewState, create_app  # noqa: E402
from pptarena.view.labelling import campaign_id  # noqa: E402
from tests.support.view_fixtures import small_run  # noqa: E402

LOOPBACK = "http://127.0.0.1:8000"
OFF_LOOPBACK = "http://192.0.2.10:8000"
TEXT = (
    "# Labelling rules\n\nThe oracle and the noop are two of the programs.\n\n"
    "<script>document.title='owned'</script>\n\n<img src=x onerror=alert(1)>\n\n"
    "[guide](javascript:alert(1))\n\n## Worked example 1 (absolute)\n\nIF **4**: all done.\n"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("view-instructions-run"))


@pytest.fixture
def site(run, tmp_path):
    """A blind campaign with instructions and one without, served off loopback."""
    with_text, tokens = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0,
                                     out=tmp_path / "with.sqlite", instructions=TEXT)  # fmt: skip
    without, other_tokens = new_campaign([run], protocol="pairwise", annotators=["carol"],
                                         out=tmp_path / "without.sqlite")  # fmt: skip
    state = ViewState([run], host="0.0.0.0", render=False, campaigns=[with_text.path, without.path])
    app = create_app(state)
    yield {"app": app, "campaign": with_text, "tokens": tokens, "other": without,
           "other_tokens": other_tokens, "state": state}  # fmt: skip
    with_text.close()
    without.close()


def _login(app, token, base=OFF_LOOPBACK):
    client = TestClient(app, base_url=base)
    r = client.get("/login", params={"token": token}, follow_redirects=False)
    assert r.status_code == 303
    return client, r.headers["location"].split("/")[2]


def _csrf(page):
    return re.search(r'data-item="(\d+)"', page).group(1), re.search(r'data-csrf="([^"]+)"', page).group(1)


def test_the_annotator_sees_the_instructions_first_then_their_queue(site):
    client, cid = _login(site["app"], site["tokens"]["alice"])
    first = client.get(f"/c/{cid}/label", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == f"/c/{cid}/instructions"
    page = client.get(first.headers["location"])
    assert page.status_code == 200
    text = page.text
    assert "<h1>Labelling rules</h1>" in text and "Worked example 1 (absolute)" in text
    start = re.search(r'<a href="([^"]+)" id="start-labelling"[^>]*autofocus', text)
    assert start and start.group(1) == f"/c/{cid}/label?pos=0"
    # seen in this session: the queue opens on the first item from now on
    item_page = client.get(f"/c/{cid}/label", follow_redirects=False)
    assert item_page.status_code == 200 and 'data-item="' in item_page.text
    link = re.search(r'<a href="([^"]+)" id="instructions-link" accesskey="h"', item_page.text)
    assert link and link.group(1) == f"/c/{cid}/instructions?pos=0"
    back = client.get(link.group(1)).text
    assert re.search(rf'href="/c/{cid}/label\?pos=0" id="start-labelling"', back)
    assert "back to your item" in back


def test_the_file_is_shown_safely_and_blind(site):
    client, cid = _login(site["app"], site["tokens"]["bob"])
    text = client.get(f"/c/{cid}/instructions").text
    body = text.split('id="instructions-text"', 1)[1].split("</article>", 1)[0]
    assert "<script" not in body and "&lt;script&gt;" in body
    assert "<img src=x" not in body and "onerror=alert(1)&gt;" in body
    assert 'href="javascript' not in text
    # the author named two of the programs: a blind campaign blanks them out
    assert "oracle" not in text.lower() and "noop" not in text.lower()
    assert body.count("[hidden]") == 2
    # the page's header links nowhere (no run pages from an annotator's page)
    header = text.split("<header", 1)[1].split("</header>", 1)[0]
    assert "href" not in header


def test_changed_instructions_are_shown_again_before_the_next_item(site):
    client, cid = _login(site["app"], site["tokens"]["alice"])
    client.get(f"/c/{cid}/instructions")
    item, csrf = _csrf(client.get(f"/c/{cid}/label").text)
    headers = {"X-CSRF-Token": csrf, "Origin": OFF_LOOPBACK}
    saved = client.post(f"/c/{cid}/api/label", json={"item": int(item), "fields": {"if": 3, "vq": 3,
                        "damage": "no"}}, headers=headers)  # fmt: skip
    assert saved.status_code == 200, saved.text
    assert client.get(f"/c/{cid}/label", follow_redirects=False).status_code == 200
    # a new session of an annotator who has labelled since the instructions were set: no detour
    again, _ = _login(site["app"], site["tokens"]["alice"])
    assert again.get(f"/c/{cid}/label", follow_redirects=False).status_code == 200
    set_instructions(site["campaign"], "# Rules, second edition\n\nNew rule.\n", source="v2.md")
    detour = client.get(f"/c/{cid}/label", follow_redirects=False)
    assert detour.status_code == 303 and detour.headers["location"] == f"/c/{cid}/instructions"
    assert "second edition" in client.get(detour.headers["location"]).text
    assert client.get(f"/c/{cid}/label", follow_redirects=False).status_code == 200
    # an explicit position (the previous / next links, the bar) never takes the detour
    set_instructions(site["campaign"], "# Third\n", source="v3.md")
    assert client.get(f"/c/{cid}/label", params={"pos": 1}, follow_redirects=False).status_code == 200


def test_a_campaign_without_instructions_opens_on_the_queue(site):
    client, cid = _login(site["app"], site["other_tokens"]["carol"])
    page = client.get(f"/c/{cid}/label", follow_redirects=False)
    assert page.status_code == 200 and 'id="instructions-link"' not in page.text
    none = client.get(f"/c/{cid}/instructions")
    assert none.status_code == 200 and 'id="no-instructions"' in none.text


def test_who_may_open_the_instructions_page(site):
    cid = campaign_id(site["campaign"].path)
    # another campaign's annotator: refused (the role guard), their own campaign's page opens
    carol, own = _login(site["app"], site["other_tokens"]["carol"])
    assert carol.get(f"/c/{cid}/instructions").status_code == 403
    assert carol.get(f"/c/{own}/instructions").status_code == 200
    # a stranger off loopback: refused; the admin's session: the page, without a start link
    stranger = TestClient(site["app"], base_url=OFF_LOOPBACK)
    assert stranger.get(f"/c/{cid}/instructions").status_code == 403
    admin = TestClient(site["app"], base_url=OFF_LOOPBACK)
    admin.get("/login", params={"token": site["state"].access.admin_token})
    page = admin.get(f"/c/{cid}/instructions")
    assert page.status_code == 200 and "Labelling rules" in page.text and "start-labelling" not in page.text
    # the admin's campaign page links to it
    assert f'<a href="/c/{cid}/instructions">Instructions</a>' in admin.get(f"/c/{cid}").text


# ------------------------------------------------------------------------------ in a real browser

HOSTILE = '# Rules\n\n<script>window.__pwned_i = 1</script>\n\n<img src=x onerror="window.__pwned_j=1">\n'


def _alt_key(page, key: str) -> None:
    """Alt+``key`` as a keyboard sends it, a char event included (the event a browser's access keys
    answer to; Playwright's ``keyboard.press("Alt+h")`` sends none with Alt held)."""
    cdp = page.context.new_cdp_session(page)
    code = f"Key{key.upper()}"
    vk = ord(key.upper())
    cdp.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", "modifiers": 1, "key": key, "code": code,
                                        "windowsVirtualKeyCode": vk})  # fmt: skip
    cdp.send("Input.dispatchKeyEvent", {"type": "char", "modifiers": 1, "text": key, "unmodifiedText": key,
                                        "key": key, "code": code})  # fmt: skip
    cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", "modifiers": 1, "key": key, "code": code,
                                        "windowsVirtualKeyCode": vk})  # fmt: skip
    cdp.detach()


@pytest.mark.slow
def test_in_chromium_instructions_first_enter_starts_and_alt_h_comes_back(run, tmp_path, browser,
                                                                           failure_shots):  # fmt: skip
    """As an annotator would: the link opens the instructions (no script of the file runs), Enter
    starts labelling, Alt+H on an item opens the instructions again, Enter goes back to that item; so
    does the plain ``h`` key, which a text field keeps as a letter."""
    from tests.support.view_fixtures import serve, stop

    c, tokens = new_campaign([run], protocol="absolute", annotators=["alice"], out=tmp_path / "c.sqlite",
                             instructions=HOSTILE + "\n## Worked example 1\n\nIF 4.\n")  # fmt: skip
    c.close()
    proc, url, _ = serve([run], "--campaign", str(c.path))
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        failure_shots.append(("annotator", page))
        page.goto(f"{url}/login?token={tokens['alice']}")
        page.wait_for_selector("#instructions-text")
        assert page.url.endswith("/instructions")
        assert "Worked example 1" in page.inner_text("#instructions-text")
        for marker in ("__pwned_i", "__pwned_j"):
            assert page.evaluate(f"typeof window.{marker}") == "undefined", marker
        assert page.evaluate("document.activeElement.id") == "start-labelling"
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.wait_for_selector("#label-form")
        item = page.get_attribute("body", "data-item")
        with page.expect_navigation():
            _alt_key(page, "h")
        page.wait_for_selector("#instructions-text")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.wait_for_selector("#label-form")
        assert page.get_attribute("body", "data-item") == item
        with page.expect_navigation():  # the plain key of the keys table does the same
            page.keyboard.press("h")
        page.wait_for_selector("#instructions-text")
        page.go_back()
        page.wait_for_selector("#label-form")
        page.click("textarea")  # in a text field h is a letter, not the key
        page.keyboard.type("h is text")
        assert page.get_attribute("body", "data-item") == item and "/instructions" not in page.url
        assert page.input_value("textarea").endswith("h is text")
    finally:
        ctx.close()
        stop(proc)
