"""Labelling campaigns: creation (items, overlap, seeded queues, tokens), append-only label versions,
undo, concurrent writers, stats, and the exchange formats (meta-eval CSV, JSON lines, Label Studio).
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading

import pytest

from pptarena.label.campaign import new_campaign, parse_annotators, share
from pptarena.label.exchange import export, export_csv, import_label_studio
from pptarena.label.stats import campaign_stats, stats_text
from pptarena.label.store import Campaign, CampaignError
from tests.support.view_fixtures import label_new, small_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("label-run"))


def _new(run, tmp_path, **kw):
    kw.setdefault("protocol", "absolute")
    kw.setdefault("annotators", ["alice", "bob"])
    return new_campaign([run], out=tmp_path / "c.sqlite", **kw)


def test_items_overlap_and_seeded_queues(run, tmp_path):
    campaign, tokens = _new(run, tmp_path, overlap=0.5, seed=4)
    assert len(campaign.items) == 6  # 3 tasks × oracle, noop: every attempt left a prediction
    assert set(tokens) == {"alice", "bob"} and tokens["alice"] != tokens["bob"]
    assert campaign.overlap() == 0.5  # 3 of 6 items in both queues
    qa, qb = [i for i, _ in campaign.queue("alice")], [i for i, _ in campaign.queue("bob")]
    assert len(set(qa) & set(qb)) == 3 and set(qa) | set(qb) == set(campaign.items)
    # the same seed gives the same queues; the order differs per annotator
    again = share(6, ["alice", "bob"], 0.5, 4, False)
    assert [i for i, _ in again["alice"]] == qa
    # tokens are stored as digests only, and open exactly their annotator
    raw = (tmp_path / "c.sqlite").read_bytes()
    assert tokens["alice"].encode() not in raw
    assert campaign.annotator_for_token(tokens["bob"]) == "bob"
    assert campaign.annotator_for_token("guess") is None
    assert campaign.blind


def test_pairwise_items_and_sampling(run, tmp_path):
    campaign, _ = _new(run, tmp_path, protocol="pairwise", sample=2, seed=1)
    assert len(campaign.items) == 2
    for item in campaign.items.values():
        assert {item.agent, item.agent_b} == {"oracle", "noop"} and item.run == item.run_b


def test_labels_are_append_only_with_history_and_undo(run, tmp_path):
    campaign, _ = _new(run, tmp_path, overlap=1.0)
    item = campaign.queue("alice")[0][0]
    v1 = campaign.append("alice", item, {"if": 1, "vq": 2, "damage": "no"}, 4.5)
    v2 = campaign.append(
        "alice", item, {"if": 4, "vq": 3, "damage": "yes", "damage_slide": 1, "comment": "ok"}, 2.0
    )
    assert campaign.current()[("alice", item)].fields["if"] == 4
    undone = campaign.undo("alice", item)
    assert undone.fields == v1.fields  # back to version 1, as a new version
    cleared = campaign.undo("alice", item)
    assert cleared.fields is None and ("alice", item) not in campaign.current()
    history = campaign.history("alice", item)
    assert [v.id for v in history] == [v1.id, v2.id, undone.id, cleared.id]  # nothing lost
    assert history[0].seconds == 4.5 and history[0].created_at <= history[1].created_at
    # the file itself refuses to change or drop a version
    conn = sqlite3.connect(campaign.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE labels SET fields = NULL")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM labels")
    conn.close()
    assert conn is not None and campaign.current() == {}


@pytest.mark.parametrize(
    "fields",
    [
        {"if": 5, "vq": 1, "damage": "no"},
        {"if": 1, "vq": 1},
        {"if": "3", "vq": 1, "damage": "no"},
        {"choice": "a"},
    ],
)
def test_invalid_labels_are_refused(run, tmp_path, fields):
    campaign, _ = _new(run, tmp_path)
    item = campaign.queue("alice")[0][0]
    with pytest.raises(CampaignError):
        campaign.append("alice", item, fields, 1.0)
    other = next(i for i in campaign.items if i not in dict(campaign.queue("alice")))
    with pytest.raises(CampaignError, match="not in alice's queue"):
        campaign.append("alice", other, {"if": 1, "vq": 1, "damage": "no"}, 1.0)


def test_two_writers_at_once_lose_nothing(run, tmp_path):
    campaign, _ = _new(run, tmp_path, overlap=1.0)
    second = Campaign.open(campaign.path)  # a second connection, as a second server process would have
    got: list[int] = []

    def write(c, who):
        for k in range(40):
            item = c.queue(who)[k % 6][0]
            got.append(c.append(who, item, {"if": k % 5, "vq": 2, "damage": "no"}, 1.0).id)

    threads = [
        threading.Thread(target=write, args=(campaign, "alice")),
        threading.Thread(target=write, args=(second, "bob")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(v.id for v in Campaign.open(campaign.path).history()) == sorted(got) and len(got) == 80


def test_stats_and_meta_eval_csv_round_trip(run, tmp_path):
    from pptarena.report.meta_eval import meta_eval

    campaign, _ = _new(run, tmp_path, overlap=1.0)
    for item_id, item in campaign.items.items():
        good = item.agent == "oracle"
        campaign.append("alice", item_id, {"if": 4 if good else 0, "vq": 3, "damage": "no"}, 1.0)
        campaign.append("bob", item_id, {"if": 3 if good else 1, "vq": 3, "damage": "no"}, 1.0)
    stats = campaign_stats(campaign, n_boot=100)
    # alice 4/0, bob 3/1 on the good/bad attempts: ordinal α 0.6333 (the krippendorff package's value
    # for this reliability matrix); everyone gave VQ 3, so its α is undefined
    assert stats["people"]["if"]["items"] == 6 and stats["people"]["if"]["alpha"] == pytest.approx(0.6333)
    assert stats["people"]["vq"]["alpha"] is None
    judge = stats["judges"][str(run.resolve())]["if"]["structural"]
    assert judge["n"] == 6 and judge["kendall_tau_b"]["value"] == pytest.approx(1.0)
    assert "α" in stats_text(stats)
    # the CSV is the meta-eval format: two annotators per attempt, averaged by meta-eval
    text = export_csv(campaign)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 12 and {"task_id", "agent", "epoch", "label", "annotator"} <= set(rows[0])
    labels = tmp_path / "labels.csv"
    labels.write_text(text)
    report = meta_eval(run, labels_path=labels, n_boot=100)
    assert report["labels"]["n"] == 6
    assert report["agreement"]["structural"]["kendall_tau_b"]["value"] == pytest.approx(1.0)


def test_jsonl_has_every_version_and_label_studio_round_trip(run, tmp_path):
    campaign, _ = _new(run, tmp_path, overlap=1.0)
    item = campaign.queue("alice")[0][0]
    campaign.append("alice", item, {"if": 1, "vq": 1, "damage": "no"}, 1.0)
    campaign.append("alice", item, {"if": 2, "vq": 1, "damage": "no", "comment": "<b>fine</b>"}, 1.0)
    export(campaign, "jsonl", tmp_path / "all.jsonl")
    versions = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert [v["fields"]["if"] for v in versions] == [1, 2]
    files = export(campaign, "label-studio", tmp_path / "ls.json")
    tasks = json.loads(files[0].read_text())
    assert len(tasks) == 6 and "<Choices" in files[1].read_text()
    # labelled elsewhere: carol (new) answers in Label Studio; the import appends her labels
    target = next(t for t in tasks if t["id"] == item)
    target["annotations"].append(
        {
            "completed_by": {"email": "carol@example.org"},
            "result": [
                {"from_name": "if", "type": "choices", "value": {"choices": ["3"]}},
                {"from_name": "vq", "type": "choices", "value": {"choices": ["4"]}},
                {"from_name": "damage", "type": "choices", "value": {"choices": ["no"]}},
            ],
        }
    )
    (tmp_path / "back.json").write_text(json.dumps(tasks))
    fresh, _ = new_campaign(
        [run], protocol="absolute", annotators=["alice", "bob"], out=tmp_path / "d.sqlite"
    )
    got = import_label_studio(fresh, tmp_path / "back.json")
    assert got["added"] == 2 and "carol@example.org" in got["new_annotators"]
    current = fresh.current()
    assert current[("carol@example.org", item)].fields == {"if": 3, "vq": 4, "damage": "no"}
    assert current[("alice", item)].fields["comment"] == "<b>fine</b>"
    again = import_label_studio(fresh, tmp_path / "back.json")  # the same file twice: nothing new
    assert again["added"] == 0 and again["unchanged"] == 2 and len(fresh.history()) == 2


@pytest.mark.slow
def test_cli_new_prints_links_and_refuses_bad_names(run, tmp_path):
    tokens, out = label_new(
        "--run", str(run), "--annotators", "ann,ben", "--out", str(tmp_path / "x.sqlite"), "--port", "8123"
    )
    assert set(tokens) == {"ann", "ben"} and ":8123/login?token=" in out
    assert Campaign.open(tmp_path / "x.sqlite").annotator_for_token(tokens["ben"]) == "ben"
    with pytest.raises(CampaignError):
        parse_annotators("<script>alert(1)</script>")
    with pytest.raises(CampaignError):
        parse_annotators("a,a")
    with pytest.raises(CampaignError, match="never overwritten"):
        _new(run, tmp_path) and _new(run, tmp_path)
