"""Issue 34 as it is checked: two annotators and one adjudicator on a real 4-agent run, end to end.

The run is real (the runner on two tasks of the bundled demo set; four agents — two oracles and two
no-ops under labels no page would hold by chance — and the structural judge under one too; slides
rendered by LibreOffice when a page first shows them). ``arena view`` is a real process on loopback;
the campaigns are made while it runs, with the real CLI (``arena label new``, absolute and pairwise,
both annotators label every item), known-answer items marked with ``arena label seed --from-file``.

In the system Chromium (Playwright), two annotators in two browser contexts open the links they were
printed (and the instructions page first, when ``label new`` has ``--instructions``) and label by
keyboard: absolute scales by their keys, pairwise choices by left / right. On every item: the save
status, on screen with the page scrolled to the bottom, says ``saved (version N)`` with N counted per
annotator (the second annotator's first label of an item is version 1; a change is version 2);
nothing an annotator gets (page text, HTML, every URL the browser asked for, the label API's answers)
names an agent or the judge; a finished queue says so; each annotator's pairwise history is in the
left / right terms they answered in. The two disagree on purpose; the adjudicator (the local admin:
a browser without an annotator's session, on a loopback server) sees exactly those items with both
labels side by side, and records gold labels with a note. Last, ``arena label stats --json`` (and
``--gold``) give the agreement, known-answer accuracy, gold agreement and people-vs-judge figures
this test computes on its own from the labels it typed (``krippendorff``, ``scipy``, counting).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
pytest.importorskip("playwright.sync_api", reason="playwright (test extra) is not installed")
krippendorff = pytest.importorskip("krippendorff", reason="krippendorff (test extra) is not installed")
scipy_stats = pytest.importorskip("scipy.stats", reason="scipy (test extra) is not installed")
from click.testing import CliRunner  # noqa: E402

from pptarena.cli.main import cli  # noqa: E402
from pptarena.label.adjudication import current_gold, gold_history  # noqa: E402
from pptarena.label.store import Campaign  # noqa: E402
from pptarena.run.configuration.config import load_config  # noqa: E402
from pptarena.run.configuration.registry import get_registry, reset_registry  # noqa: E402
from pptarena.run.runner import Runner  # noqa: E402
from pptarena.view.labelling import campaign_id  # noqa: E402
from tests.support.config import use, write_run_config  # noqa: E402
from tests.support.view_fixtures import ARENA, free_port, serve, stop  # noqa: E402

pytestmark = pytest.mark.slow

#: agent label -> baseline; two oracles and two no-ops, so an item's quality tells no agent apart
AGENTS = {"Zorvexa": "oracle", "Quillonet": "noop", "Brakmundo": "oracle", "Vetchnyra": "noop"}
JUDGE = "Plumbagor"
TASKS = ("birds-title-colour", "qbr-fix-typos")
#: what nothing an annotator gets may contain (compared lower-case)
HIDDEN = tuple(n.lower() for n in (*AGENTS, JUDGE, "oracle", "noop"))
ANNOTATORS = ("ann1", "ann2")
PAIRWISE_SAMPLE = 6
INSTRUCTIONS_TEXT = "Worked example for the e2e campaign: a title recoloured exactly as asked is a 4."
#: absolute items the second annotator answers differently on purpose: (agent, task) -> change
ANN2_DIFFERS = {
    ("Brakmundo", "birds-title-colour"): {"if": 2},
    ("Vetchnyra", "qbr-fix-typos"): {"damage": "yes", "damage_slide": 1},
    ("Zorvexa", "qbr-fix-typos"): {"vq": 3},
}
#: gold labels the adjudicator records (agent, task) -> (fields, note); the third disagreement stays open
GOLD = {
    ("Brakmundo", "birds-title-colour"): (
        {"if": 4, "vq": 4, "damage": "no"},
        "the title has the target's colour",
    ),
    ("Vetchnyra", "qbr-fix-typos"): ({"if": 0, "vq": 3, "damage": "no"}, "nothing changed, nothing damaged"),
}
#: known-answer items (marked with `arena label seed --from-file`): (agent, task) -> expected if
KNOWN = {
    ("Brakmundo", "birds-title-colour"): 4,
    ("Quillonet", "qbr-fix-typos"): 0,
    ("Zorvexa", "qbr-fix-typos"): 4,
}

#: records every text the save status takes, whether it was on screen then, and the page's scroll;
#: kept in sessionStorage, which survives the navigation that follows a save
STATUS_RECORDER = """
document.addEventListener('DOMContentLoaded', () => {
  const s = document.getElementById('save-status');
  if (!s) return;
  new MutationObserver(() => {
    const r = s.getBoundingClientRect();
    const seen = JSON.parse(sessionStorage.getItem('e2e-status') || '[]');
    seen.push([s.textContent, r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight,
               Math.round(window.scrollY)]);
    sessionStorage.setItem('e2e-status', JSON.stringify(seen));
  }).observe(s, {childList: true, characterData: true, subtree: true});
});
"""

if not shutil.which("soffice"):
    pytest.skip(
        "LibreOffice (soffice) is not installed: the slides are real renders", allow_module_level=True
    )


def _arena(*args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([*ARENA, *args], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr + out.stdout
    return out


def _links(output: str) -> dict[str, str]:
    """Annotator -> the link ``arena label new`` printed for them."""
    return dict(re.findall(r"^\s+(\S+): (http://\S+/login\?token=\S+)$", output, re.M))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The run, the server, and the two campaigns made while it serves (see the module doc)."""
    tmp = tmp_path_factory.mktemp("campaign-e2e")
    agents = [use(kind, label=label) for label, kind in AGENTS.items()]
    config = write_run_config(
        tmp / "run.toml",
        run={"jobs": 2, "cache_dir": str(tmp / "cache"), "tasks": list(TASKS)},
        dataset="demo",
        agents=agents,
        renderer="libreoffice",
        judges=[use("structural", label=JUDGE)],
    )
    reset_registry()
    run = tmp / "run"
    Runner(load_config(config, get_registry()), get_registry(), run, quiet=True).run()
    port = free_port()
    proc, url, _ = serve([run], port=port, render=True)
    try:
        # a campaign made while the server runs: its links work at once (live server)
        instructions = "--instructions" in _arena("label", "new", "--help").stdout
        guide = tmp / "instructions.md"
        guide.write_text(f"# How to label\n\n{INSTRUCTIONS_TEXT}\n", encoding="utf-8")
        extra = ["--instructions", str(guide)] if instructions else []
        made = {}
        for protocol, more in (("absolute", []), ("pairwise", ["--sample", str(PAIRWISE_SAMPLE)])):
            out = _arena(
                "label", "new", "--run", str(run), "--protocol", protocol,
                "--annotators", ",".join(ANNOTATORS), "--overlap", "1", "--seed", "11",
                "--name", f"e2e-{protocol}", "--port", str(port), *more, *extra,
            ).stdout  # fmt: skip
            path = Path(re.search(r"^File: (.+)$", out, re.M).group(1))
            made[protocol] = {"path": path, "links": _links(out), "cid": campaign_id(path)}
            assert set(made[protocol]["links"]) == set(ANNOTATORS), out
        rows = ["task_id,agent,if"] + [f"{task},{agent},{level}" for (agent, task), level in KNOWN.items()]
        (tmp / "known.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        seeded = _arena("label", "seed", str(made["absolute"]["path"]), "--from-file", str(tmp / "known.csv"))
        assert f"marked {len(KNOWN)} known-answer item(s)" in seeded.stdout, seeded.stdout + seeded.stderr
        yield {"run": run, "url": url, "campaigns": made, "instructions": instructions, "tmp": tmp}
    finally:
        stop(proc)


class Annotator:
    """One annotator's browser context: every URL it asked for and every label API answer kept."""

    def __init__(self, browser, site, protocol: str, who: str, failure_shots: list):
        self.who = who
        self.site = site
        self.campaign = site["campaigns"][protocol]
        self.context = browser.new_context(viewport={"width": 1280, "height": 720})
        self.context.add_init_script(STATUS_RECORDER)
        self.urls: list[str] = []
        self.answers: list[str] = []
        self.context.on("request", lambda r: self.urls.append(r.url))
        self.context.route(re.compile(r"/api/(label|undo)$"), self._keep_answer)
        self.page = self.context.new_page()
        failure_shots.append((who, self.page))

    def _keep_answer(self, route) -> None:
        """The label API's answer, kept (its body is gone once the page navigates) and passed on."""
        response = route.fetch()
        self.answers.append(response.text())
        route.fulfill(response=response)

    def open_link(self) -> None:
        """Open the printed link; through the instructions page first when the campaign has one."""
        page = self.page
        page.goto(self.campaign["links"][self.who])
        page.wait_for_load_state()
        if self.site["instructions"]:
            assert INSTRUCTIONS_TEXT in page.inner_text("body")  # what the annotator sees first
            self.assert_blind()
            if page.locator("#label-form").count() == 0:  # an instructions page before the queue
                start = re.compile(r"start|begin|continue|first item", re.I)
                named = page.get_by_role("link", name=start).or_(page.get_by_role("button", name=start))
                (page.locator("#start-labelling").or_(named)).first.click()
        page.wait_for_selector("#label-form")

    def item(self) -> int:
        """The campaign's item shown (the page gives its public id; the test reads the file)."""
        with Campaign.open(self.campaign["path"]) as c:
            got = c.item_for_public(self.page.get_attribute("body", "data-item"))
        assert got is not None
        return got

    def assert_blind(self) -> None:
        page = self.page
        seen = "\n".join([page.inner_text("body"), page.content(), page.url]).lower()
        for name in HIDDEN:
            assert name not in seen, (self.who, name, page.url)

    def statuses(self) -> list[list]:
        """The save status texts recorded since the last call (see STATUS_RECORDER)."""
        got = json.loads(self.page.evaluate("sessionStorage.getItem('e2e-status') || '[]'"))
        self.page.evaluate("sessionStorage.removeItem('e2e-status')")
        return got

    def save_with(self, key: str) -> int:
        """Press ``key`` (it saves and goes on); the version number the server answered, after
        checking the status the page showed said so, on screen."""
        page = self.page
        before = len(self.answers)
        with page.expect_navigation():
            page.keyboard.press(key)
        assert len(self.answers) == before + 1
        version = json.loads(self.answers[-1])["version"]
        shown = self.statuses()
        assert shown and shown[-1][:2] == [f"saved (version {version})", True], shown
        return version

    def slides_rendered(self) -> None:
        """The first slide image of the item is a real render (loaded, with pixels)."""
        first = self.page.locator(".slides img").first
        first.scroll_into_view_if_needed()
        self.page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=first.element_handle())
        self.page.evaluate("window.scrollTo(0, 0)")

    def finish(self) -> None:
        """Nothing the browser asked for or was answered names an agent or the judge."""
        for text in self.urls + self.answers:
            for name in HIDDEN:
                assert name not in text.lower(), (self.who, name, text)
        self.context.close()


def _checked(page, name: str) -> str | None:
    return page.evaluate(
        '(n) => { const c = document.querySelector(`input[name="${n}"]:checked`);'
        " return c ? c.value : null; }",
        name,
    )


def _absolute_answer(who: str, item) -> dict:
    """The label ``who`` gives an item: by its agent's quality, the second annotator differing on
    :data:`ANN2_DIFFERS`."""
    good = AGENTS[item.agent] == "oracle"
    fields = {"if": 4, "vq": 4, "damage": "no"} if good else {"if": 0, "vq": 3, "damage": "no"}
    if who == "ann2":
        fields.update(ANN2_DIFFERS.get((item.agent, item.task_id), {}))
    return fields


def _label_absolute_queue(ann: Annotator) -> dict[int, dict]:
    """Label every item of the queue by keyboard; returns item -> fields typed."""
    page = ann.page
    with Campaign.open(ann.campaign["path"]) as c:
        queue, items = c.queue(ann.who), dict(c.items)
    typed = {}
    for k, (item_id, _) in enumerate(queue):
        assert f"Item {k + 1} of {len(queue)} · {k} labelled" in page.inner_text("#progress")
        assert page.locator("#queue-done").count() == 0
        ann.assert_blind()
        assert ann.item() == item_id
        ann.slides_rendered()
        fields = _absolute_answer(ann.who, items[item_id])
        page.keyboard.press(str(fields["if"]))  # the first scale is the active one; then the next
        page.keyboard.press(str(fields["vq"]))
        page.keyboard.press("y" if fields["damage"] == "yes" else "n")
        if "damage_slide" in fields:
            page.keyboard.type(str(fields["damage_slide"]))  # y puts the cursor in the slide number
        shown = page.inner_text("#answers")
        assert (
            f"instruction following: {fields['if']}" in shown and f"visual quality: {fields['vq']}" in shown
        )
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        assert page.evaluate("window.scrollY") > 0  # the status is checked with the page scrolled
        assert ann.save_with("Enter") == 1  # this annotator's first version, whoever labelled it before
        typed[item_id] = fields
    page.wait_for_selector("#queue-done")
    assert f"All {len(queue)} items done" in page.inner_text("#queue-done")
    ann.assert_blind()
    return typed


def _cli_stats(path: Path, *extra: str) -> dict:
    got = CliRunner().invoke(cli, ["label", "stats", str(path), "--json", "--bootstrap", "20", *extra])
    assert got.exit_code == 0, got.output
    return json.loads(got.stdout)


def _alpha(a: list, b: list, level: str) -> float:
    return round(float(krippendorff.alpha(reliability_data=[a, b], level_of_measurement=level)), 4)


def _judge_scores(run: Path) -> dict[tuple[str, str], float]:
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    return {(r["task_id"], r["agent"]): float(r["scores"][JUDGE]["score"]) for r in rows}


def test_absolute_campaign_two_annotators_an_adjudicator_and_the_stats(site, browser, failure_shots):
    camp = site["campaigns"]["absolute"]
    path, cid = camp["path"], camp["cid"]
    ann1, ann2 = (Annotator(browser, site, "absolute", who, failure_shots) for who in ANNOTATORS)
    ann1.open_link()
    ann2.open_link()  # both sessions open at once, in their own contexts
    typed = {"ann1": _label_absolute_queue(ann1), "ann2": _label_absolute_queue(ann2)}
    with Campaign.open(path) as c:
        items = dict(c.items)
        queues = {who: [i for i, _ in c.queue(who)] for who in ANNOTATORS}
    assert set(typed["ann1"]) == set(typed["ann2"]) == set(items) and len(items) == len(AGENTS) * len(TASKS)

    # a change is the annotator's version 2 of the item; the other annotator's history has their own only
    first = queues["ann1"][0]
    ann1.page.goto(f"{site['url']}/c/{cid}/label?pos=0")
    want = typed["ann1"][first]
    assert (_checked(ann1.page, "if"), _checked(ann1.page, "vq")) == (str(want["if"]), str(want["vq"]))
    ann1.page.click("textarea[name=comment]")
    ann1.page.keyboard.type("second look")
    ann1.page.keyboard.press("Escape")
    assert ann1.save_with("Enter") == 2
    ann1.page.goto(f"{site['url']}/c/{cid}/label?pos=0")
    history = ann1.page.locator("#history li").all_inner_texts()
    assert len(history) == 2 and "second look" in history[1] and "second look" not in history[0]
    ann2.page.goto(f"{site['url']}/c/{cid}/label?pos={queues['ann2'].index(first)}")
    assert len(ann2.page.locator("#history li").all_inner_texts()) == 1

    # the adjudication page and the campaign page are not an annotator's
    for ann in (ann1, ann2):
        for route in ("adjudicate", ""):
            answer = ann.page.goto(f"{site['url']}/c/{cid}/{route}".rstrip("/"))
            assert answer.status == 403, (ann.who, route)
            ann.assert_blind()
        ann.finish()

    # the adjudicator: exactly the items the two disagree on, both labels side by side
    labels = {who: {i: dict(f) for i, f in typed[who].items()} for who in ANNOTATORS}
    labels["ann1"][first]["comment"] = "second look"
    by_key = {(it.task_id, it.agent): i for i, it in items.items()}
    differ = {
        i for i in items if any(labels["ann1"][i][k] != labels["ann2"][i][k] for k in ("if", "vq", "damage"))
    }
    assert differ == {by_key[(task, agent)] for agent, task in ANN2_DIFFERS}
    adj = browser.new_context(viewport={"width": 1280, "height": 900})
    page = adj.new_page()
    failure_shots.append(("adjudicator", page))
    page.goto(f"{site['url']}/c/{cid}/adjudicate")
    shown = page.eval_on_selector_all(
        "section.adjudicate-item", "s => s.map(x => [+x.dataset.item, +x.dataset.disagreement])"
    )
    assert {i for i, _ in shown} == differ
    assert [d for _, d in shown] == sorted((d for _, d in shown), reverse=True)  # most disagreement first
    assert f"{len(KNOWN)} known-answer item(s)" in page.inner_text("main")
    for item_id in differ:
        section = page.locator(f"#item-{item_id}")
        heads = section.locator("table tr").first.locator("th").all_inner_texts()
        assert heads[1:3] == list(ANNOTATORS), heads
        table = {}
        for row in section.locator("table tr").all()[1:]:
            cells = row.locator("th, td").all_inner_texts()
            table[cells[0]] = cells[1:3]
        for key in ("if", "vq", "damage"):
            assert table[key] == [str(labels[who][item_id][key]) for who in ANNOTATORS], (item_id, key, table)
        it = items[item_id]
        assert it.agent in section.locator("h2").inner_text()  # the adjudicator is told which agent
    # the gold labels, by the items' numbers the page shows; recorded with `arena label gold` here
    # (the page's own form is the subject of test_the_gold_label_form_records_in_chromium)
    for (agent, task), (fields, note) in GOLD.items():
        item_id = by_key[(task, agent)]
        assert f"Item {item_id} · {task} · {agent}" in page.locator(f"#item-{item_id} h2").inner_text()
        label = ",".join(f"{k}={v}" for k, v in fields.items())
        got = CliRunner().invoke(
            cli, ["label", "gold", str(path), str(item_id), label, "--note", note, "--by", "judith"]
        )
        assert got.exit_code == 0 and "version 1 of this item" in got.stdout, got.output
    page.reload()
    for (agent, task), (fields, note) in GOLD.items():
        section = page.locator(f"#item-{by_key[(task, agent)]}")
        gold_cells = [r.locator("td").last.inner_text() for r in section.locator("table tr").all()[1:4]]
        assert gold_cells == [str(fields[k]) for k in ("if", "vq", "damage")]  # the gold column
        section.locator("details summary").click()
        assert "Gold label versions (1)" in section.inner_text() and note in section.inner_text()
    adj.close()
    with Campaign.open(path) as c:
        gold = {i: g.fields for i, g in current_gold(c).items()}
        notes = {g.item: (g.adjudicator, g.note) for g in gold_history(c)}
    assert gold == {by_key[(t, a)]: f for (a, t), (f, _) in GOLD.items()}
    assert notes == {by_key[(t, a)]: ("judith", n) for (a, t), (_, n) in GOLD.items()}

    # the stats over the CLI, against what this test computes from the labels it typed
    order = sorted(items)
    plain, with_gold = _cli_stats(path), _cli_stats(path, "--gold")
    for key, level, code in (("if", "ordinal", int), ("vq", "ordinal", int), ("damage", "nominal", None)):
        values = {
            who: [labels[who][i][key] if code else int(labels[who][i][key] == "yes") for i in order]
            for who in ANNOTATORS
        }
        block = plain["people"][key]
        assert block["alpha"] == pytest.approx(_alpha(values["ann1"], values["ann2"], level), abs=1e-4), key
        pair = block["pairs"]["ann1|ann2"]
        same = sum(1 for x, y in zip(values["ann1"], values["ann2"], strict=True) if x == y)
        assert (pair["items"], pair["agreement"]) == (len(order), round(same / len(order), 4)), key
        assert with_gold["people"][key]["alpha"] == block["alpha"]  # gold labels are not an annotator
    assert plain["progress"] == {who: {"queue": len(items), "labelled": len(items)} for who in ANNOTATORS}
    # known-answer accuracy (flagged below the default 0.7)
    known = plain["known_answers"]
    assert known["items"] == len(KNOWN)
    for who in ANNOTATORS:
        right = sum(1 for (a, t), level in KNOWN.items() if labels[who][by_key[(t, a)]]["if"] == level)
        got = known["annotators"][who]
        assert (got["labelled"], got["right"]) == (len(KNOWN), right)
        assert got["accuracy"] == round(right / len(KNOWN), 4)
        assert got["flagged"] == (right / len(KNOWN) < 0.7)
    assert [known["annotators"][w]["flagged"] for w in ANNOTATORS] == [False, True]
    # --gold: each annotator's agreement with the gold labels
    assert "gold" not in plain and with_gold["gold"]["items"] == len(GOLD)
    for who in ANNOTATORS:
        got = with_gold["gold"]["annotators"][who]
        assert got["items"] == len(gold)
        for key in ("if", "vq", "damage"):
            share = sum(1 for i, f in gold.items() if labels[who][i][key] == f[key]) / len(gold)
            assert got[key] == round(share, 4), (who, key)
    # people against the judge: mean instruction following per attempt (gold where it exists), τ_b
    scores = _judge_scores(site["run"])
    expected = {}
    for name, use_gold in (("plain", False), ("gold", True)):
        human, judge = [], []
        for i in order:
            values = [gold[i]["if"]] if use_gold and i in gold else [labels[w][i]["if"] for w in ANNOTATORS]
            human.append(sum(values) / len(values) / 4)
            judge.append(scores[(items[i].task_id, items[i].agent)])
        expected[name] = round(float(scipy_stats.kendalltau(human, judge).statistic), 4)
    assert expected["plain"] != expected["gold"]  # the gold labels change what is compared
    for name, stats in (("plain", plain), ("gold", with_gold)):
        (block,) = stats["judges"].values()
        series = block["if"][JUDGE]
        assert series["n"] == len(order)
        assert series["kendall_tau_b"]["value"] == pytest.approx(expected[name], abs=1e-4), name


def _pairwise_answer(who: str, item, flip: bool) -> str:
    """``a``, ``b`` or ``tie`` in the campaign's terms: the oracle's side, a tie between two of a
    kind; ``flip``: the other answer (a disagreement on purpose)."""
    kind_a, kind_b = AGENTS[item.agent], AGENTS[item.agent_b]
    want = "tie" if kind_a == kind_b else ("a" if kind_a == "oracle" else "b")
    return {"a": "b", "b": "a", "tie": "a"}[want] if flip else want


def test_pairwise_campaign_left_right_keys_history_and_agreement(site, browser, failure_shots):
    camp = site["campaigns"]["pairwise"]
    path, cid = camp["path"], camp["cid"]
    with Campaign.open(path) as c:
        items = dict(c.items)
        queues = {who: c.queue(who) for who in ANNOTATORS}
    assert len(items) == PAIRWISE_SAMPLE
    flipped = set(sorted(items)[:2])  # the second annotator differs on these
    # the test has teeth: some annotator sees an item with a winner swapped (left is b)
    assert any(s and _pairwise_answer(w, items[i], False) != "tie" for w in ANNOTATORS for i, s in queues[w])
    chosen = {w: {} for w in ANNOTATORS}  # campaign terms
    pressed = {w: {} for w in ANNOTATORS}  # screen terms
    for who in ANNOTATORS:
        ann = Annotator(browser, site, "pairwise", who, failure_shots)
        ann.open_link()
        page = ann.page
        for k, (item_id, swapped) in enumerate(queues[who]):
            assert f"Item {k + 1} of {PAIRWISE_SAMPLE}" in page.inner_text("#progress")
            ann.assert_blind()
            assert ann.item() == item_id
            heads = page.eval_on_selector_all("#pair-grid .h", "hs => hs.map(h => h.textContent)")
            assert heads == ["original", "left prediction", "right prediction", "target"]
            ann.slides_rendered()
            answer = _pairwise_answer(who, items[item_id], who == "ann2" and item_id in flipped)
            left, right = ("b", "a") if swapped else ("a", "b")
            side = {left: "left", right: "right", "tie": "tie"}[answer]
            assert ann.save_with({"left": "1", "right": "2", "tie": "0"}[side]) == 1
            chosen[who][item_id], pressed[who][item_id] = answer, side
        page.wait_for_selector("#queue-done")
        assert f"All {PAIRWISE_SAMPLE} items done" in page.inner_text("#queue-done")
        # each item's history, in the left / right terms this annotator answered in
        for k, (item_id, _) in enumerate(queues[who]):
            page.goto(f"{site['url']}/c/{cid}/label?pos={k}")
            ann.assert_blind()
            (line,) = page.locator("#history li").all_inner_texts()
            assert f'"choice": "{pressed[who][item_id]}"' in line, (who, item_id, line)
            assert _checked(page, "choice") == pressed[who][item_id]
        ann.finish()
    with Campaign.open(path) as c:
        stored = {
            w: {i: v.fields["choice"] for (a, i), v in c.current().items() if a == w} for w in ANNOTATORS
        }
    assert stored == chosen

    # the adjudicator sees the two items where they disagree
    order = sorted(items)
    differ = {i for i in order if chosen["ann1"][i] != chosen["ann2"][i]}
    assert differ == flipped
    adj = browser.new_context()
    page = adj.new_page()
    failure_shots.append(("adjudicator", page))
    page.goto(f"{site['url']}/c/{cid}/adjudicate")
    shown = page.eval_on_selector_all("section.adjudicate-item", "s => s.map(x => +x.dataset.item)")
    assert set(shown) == differ
    for item_id in differ:
        cells = page.locator(f"#item-{item_id} table tr").nth(1).locator("th, td").all_inner_texts()
        assert cells[:3] == ["choice", chosen["ann1"][item_id], chosen["ann2"][item_id]]
    adj.close()

    # agreement over the CLI: raw agreement, Cohen's κ, nominal α
    stats = _cli_stats(path)
    x = [chosen["ann1"][i] for i in order]
    y = [chosen["ann2"][i] for i in order]
    n = len(order)
    p_o = sum(1 for a, b in zip(x, y, strict=True) if a == b) / n
    p_e = sum((x.count(v) / n) * (y.count(v) / n) for v in {"a", "b", "tie"})
    pair = stats["people"]["choice"]["pairs"]["ann1|ann2"]
    assert (pair["items"], pair["agreement"]) == (n, round(p_o, 4))
    assert pair["cohen_kappa"] == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-4)
    code = {"a": 0, "b": 1, "tie": 2}
    alpha = _alpha([code[v] for v in x], [code[v] for v in y], "nominal")
    assert stats["people"]["choice"]["alpha_nominal"] == pytest.approx(alpha, abs=1e-4)
    # people against the judge: on the items people preferred one side of, does the judge too?
    scores = _judge_scores(site["run"])
    want = {"items": 0, "concordant": 0, "tied": 0, "discordant": 0}
    for i in order:
        votes = [chosen[w][i] for w in ANNOTATORS]
        a, b = votes.count("a"), votes.count("b")
        if a == b:
            continue
        it = items[i]
        preferred, other = (it.agent, it.agent_b) if a > b else (it.agent_b, it.agent)
        diff = scores[(it.task_id, preferred)] - scores[(it.task_id, other)]
        want["items"] += 1
        want["concordant" if diff > 0 else "tied" if diff == 0 else "discordant"] += 1
    (block,) = stats["judges"].values()
    got = block["choice"][JUDGE]
    assert {k: got[k] for k in want} == want
    assert got["rate"] == round(want["concordant"] / want["items"], 4)


def _record_gold_on_page(page, item_id: int, fields: dict, note: str, by: str):
    """Fill and send the gold label form of an item of the adjudication page, as a person would;
    the response of the page it leads to."""
    form = page.locator(f"#item-{item_id} form.gold-form")
    for key in ("if", "vq", "damage"):
        form.locator(f"select[name={key}]").select_option(str(fields[key]))
    form.locator("input[name=note]").fill(note)
    form.locator("input[name=by]").fill(by)
    with page.expect_navigation() as went:
        form.locator("button[value=record]").click()
    return went.value


def test_the_gold_label_form_records_in_chromium(site, browser, failure_shots):
    """The adjudicator records a gold label with a note through the page's form in the browser."""
    out = _arena(
        "label", "new", "--run", str(site["run"]), "--annotators", ",".join(ANNOTATORS),
        "--overlap", "1", "--name", "e2e-gold-form", "--port", site["url"].rsplit(":", 1)[1],
    ).stdout  # fmt: skip
    path = Path(re.search(r"^File: (.+)$", out, re.M).group(1))
    with Campaign.open(path) as c:  # the annotators' labels: they differ on one item
        target = min(c.items)
        for who, level in zip(ANNOTATORS, (4, 1), strict=True):
            c.append(who, target, {"if": level, "vq": 3, "damage": "no"}, 1.0)
    page = browser.new_context().new_page()
    failure_shots.append(("adjudicator", page))
    page.goto(f"{site['url']}/c/{campaign_id(path)}/adjudicate")
    assert page.eval_on_selector_all("section.adjudicate-item", "s => s.map(x => +x.dataset.item)") == [
        target
    ]
    fields, note = {"if": 3, "vq": 3, "damage": "no"}, "half the titles were changed"
    answer = _record_gold_on_page(page, target, fields, note, "judith")
    assert answer.status == 200, f"{answer.status}: {page.inner_text('main')}"  # back on the list
    section = page.locator(f"#item-{target}")
    assert "gold label saved" in section.inner_text(), page.inner_text("body")
    section.locator("details summary").click()
    assert "Gold label versions (1)" in section.inner_text() and note in section.inner_text()
    with Campaign.open(path) as c:
        assert current_gold(c)[target].fields == fields
        assert [(g.adjudicator, g.note) for g in gold_history(c, target)] == [("judith", note)]
