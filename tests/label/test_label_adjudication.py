"""Adjudication on a real small campaign: where two annotators disagree (by the campaign's scales),
gold labels recorded and versioned in the campaign file, and what ``stats --gold`` and
``export --gold`` change.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.label.adjudication import (
    GOLD_ANNOTATOR,
    current_gold,
    disagreements,
    gold_history,
    parse_label,
    record_gold,
    spread,
)
from pptarena.label.campaign import new_campaign
from pptarena.label.exchange import export, export_csv, export_jsonl
from pptarena.label.stats import _labels_for, campaign_stats, stats_text
from pptarena.label.store import Campaign, CampaignError
from tests.support.view_fixtures import small_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("adjudication-run"))


def _item(campaign, task, agent):
    return next(i for i, it in campaign.items.items() if it.task_id == task and it.agent == agent)


@pytest.fixture
def labelled(run, tmp_path):
    """Alice and Bob label every item (overlap 1): they disagree on IF of task-1/oracle (4 vs 1), on
    damage of task-2/noop, and agree on the rest."""
    campaign, _ = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0,
                               out=tmp_path / "c.sqlite")  # fmt: skip
    for item_id, it in campaign.items.items():
        level = 4 if it.agent == "oracle" else 0
        campaign.append("alice", item_id, {"if": level, "vq": 3, "damage": "no"}, 1.0)
        bob = {"if": level, "vq": 3, "damage": "no"}
        if (it.task_id, it.agent) == ("task-1", "oracle"):
            bob["if"] = 1
        if (it.task_id, it.agent) == ("task-2", "noop"):
            bob.update(damage="yes", damage_slide=1)
        campaign.append("bob", item_id, bob, 1.0)
    yield campaign
    campaign.close()


def test_spread_by_scale():
    assert spread([4, 1], "ordinal") == 0.75 and spread([2, 2, 2], "ordinal") == 0
    assert spread(["yes", "no"], "nominal") == 1.0  # two annotators who differ
    assert spread(["a", "a", "b"], "nominal") == 0.5 and spread(["a", "b", "tie"], "nominal") == 1.0
    assert spread([3], "ordinal") == 0


def test_disagreements_listed_side_by_side_and_sorted(labelled):
    c = labelled
    if_item, damage_item = _item(c, "task-1", "oracle"), _item(c, "task-2", "noop")
    rows = disagreements(c)
    assert [r["item"] for r in rows] == [damage_item, if_item]  # damage split 1.0 before IF spread 0.75
    by = {r["item"]: r for r in rows}
    assert by[if_item]["scales"] == {"if": 0.75, "vq": 0.0, "damage": 0.0}
    assert by[if_item]["labels"]["alice"]["if"] == 4 and by[if_item]["labels"]["bob"]["if"] == 1
    assert by[damage_item]["labels"]["bob"]["damage_slide"] == 1 and by[damage_item]["gold"] is None
    assert [r["item"] for r in disagreements(c, sort="if")] == [if_item, damage_item]
    assert [r["item"] for r in disagreements(c, sort="item")] == sorted([if_item, damage_item])
    everything = disagreements(c, include_agreed=True)
    assert len(everything) == len(c.items) and everything[-1]["disagreement"] == 0
    with pytest.raises(CampaignError, match="sort"):
        disagreements(c, sort="agent")


def test_gold_labels_are_versioned_append_only_and_kept_in_the_file(labelled):
    c = labelled
    item = _item(c, "task-1", "oracle")
    g1 = record_gold(c, item, {"if": 3, "vq": 3, "damage": "no"}, note="title kept its font", by="carol")
    g2 = record_gold(c, item, {"if": 4, "vq": 3, "damage": "no"}, note="on second look: exact", by="dave")
    assert current_gold(c)[item].fields["if"] == 4 and current_gold(c)[item].adjudicator == "dave"
    assert [(g.id, g.adjudicator, g.note) for g in gold_history(c, item)] == [
        (g1.id, "carol", "title kept its font"),
        (g2.id, "dave", "on second look: exact"),
    ]
    assert g1.created_at <= g2.created_at
    row = next(r for r in disagreements(c) if r["item"] == item)
    assert row["gold"]["fields"]["if"] == 4 and row["gold"]["by"] == "dave"
    # withdrawing is a version too; the history stays whole
    record_gold(c, item, None, note="ask the author", by="carol")
    assert item not in current_gold(c) and len(gold_history(c, item)) == 3
    # the campaign file refuses to change or drop a version
    conn = sqlite3.connect(c.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE gold_labels SET note = ''")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM gold_labels")
    conn.close()
    # closed (checkpointed) and reopened: the gold labels are in the file
    record_gold(c, item, {"if": 4, "vq": 3, "damage": "no"}, by="carol")
    c.close()
    with Campaign.open(c.path) as again:
        assert len(gold_history(again, item)) == 4 and current_gold(again)[item].adjudicator == "carol"


def test_invalid_gold_labels_are_refused(labelled):
    c = labelled
    item = _item(c, "task-1", "oracle")
    with pytest.raises(CampaignError):
        record_gold(c, item, {"if": 5, "vq": 3, "damage": "no"}, by="carol")
    with pytest.raises(CampaignError, match="not in campaign"):
        record_gold(c, 999, {"if": 4, "vq": 3, "damage": "no"}, by="carol")
    with pytest.raises(CampaignError, match="adjudicator"):
        record_gold(c, item, {"if": 4, "vq": 3, "damage": "no"}, by="")
    assert gold_history(c) == []


def test_parse_label():
    assert parse_label("absolute", "if=4,vq=3,damage=no") == {"if": 4, "vq": 3, "damage": "no"}
    assert (
        parse_label("absolute", '{"if": 2, "vq": 1, "damage": "yes", "damage_slide": 2}')["damage_slide"] == 2
    )
    assert parse_label("pairwise", "tie") == {"choice": "tie"}
    with pytest.raises(CampaignError):
        parse_label("absolute", "if=4")
    with pytest.raises(CampaignError):
        parse_label("pairwise", "left")


def test_stats_with_gold_take_the_gold_label_against_the_judges(labelled):
    c = labelled
    item = _item(c, "task-1", "oracle")
    run = c.items[item].run
    plain = {lab.task_id: lab.value for lab in _labels_for(c, run, "if") if lab.agent == "oracle"}
    assert plain["task-1"] == pytest.approx((4 + 1) / 2 / 4)  # the mean of alice and bob
    record_gold(c, item, {"if": 2, "vq": 3, "damage": "no"}, note="half done", by="carol")
    settled = {
        lab.task_id: lab.value for lab in _labels_for(c, run, "if", gold=True) if lab.agent == "oracle"
    }
    assert settled["task-1"] == pytest.approx(2 / 4) and settled["task-2"] == plain["task-2"]
    plain_stats = campaign_stats(c, n_boot=20)
    gold_stats = campaign_stats(c, n_boot=20, gold=True)
    assert "gold" not in plain_stats
    assert gold_stats["people"] == plain_stats["people"]  # agreement between people: the people's labels
    assert gold_stats["gold"]["items"] == 1
    assert gold_stats["gold"]["annotators"]["alice"] == {"items": 1, "if": 0.0, "vq": 1.0, "damage": 1.0}
    assert gold_stats["judges"] != plain_stats["judges"]
    assert "Gold labels: 1 item(s)" in stats_text(gold_stats)


def test_export_with_gold(labelled, tmp_path):
    c = labelled
    item = _item(c, "task-1", "oracle")
    record_gold(c, item, {"if": 3, "vq": 2, "damage": "no"}, note="mostly done", by="carol")
    plain = list(csv.DictReader(io.StringIO(export_csv(c))))
    rows = list(csv.DictReader(io.StringIO(export_csv(c, gold=True))))
    one = [r for r in rows if (r["task_id"], r["agent"]) == ("task-1", "oracle")]
    assert [(r["annotator"], r["label"], r["if"], r["comment"]) for r in one] == [
        (GOLD_ANNOTATOR, "0.75", "3", "mostly done")
    ]
    assert len(rows) == len(plain) - 1  # the item's two annotator rows became one gold row
    others = [r for r in rows if (r["task_id"], r["agent"]) != ("task-1", "oracle")]
    assert others == [r for r in plain if (r["task_id"], r["agent"]) != ("task-1", "oracle")]
    lines = [json.loads(x) for x in export_jsonl(c, gold=True).splitlines()]
    assert [x["adjudicator"] for x in lines if x.get("kind") == "gold"] == ["carol"]
    assert len(export_jsonl(c).splitlines()) == len(lines) - 1
    with pytest.raises(CampaignError, match="--gold"):
        export(c, "label-studio", tmp_path / "ls.json", gold=True)


def test_pairwise_disagreement_and_gold(run, tmp_path):
    c, _ = new_campaign([run], protocol="pairwise", annotators=["alice", "bob"], overlap=1.0,
                        out=tmp_path / "p.sqlite")  # fmt: skip
    first, second = sorted(c.items)[:2]
    c.append("alice", first, {"choice": "a"}, 1.0)
    c.append("bob", first, {"choice": "b"}, 1.0)
    c.append("alice", second, {"choice": "tie"}, 1.0)
    c.append("bob", second, {"choice": "tie"}, 1.0)
    rows = disagreements(c)
    assert [(r["item"], r["scales"]) for r in rows] == [(first, {"choice": 1.0})]
    assert rows[0]["agent_b"] and rows[0]["labels"] == {"alice": {"choice": "a"}, "bob": {"choice": "b"}}
    record_gold(c, first, parse_label("pairwise", "a"), by="carol")
    stats = campaign_stats(c, n_boot=20, gold=True)
    assert stats["gold"]["annotators"]["alice"]["choice"] == 1.0
    assert stats["gold"]["annotators"]["bob"]["choice"] == 0.0
    c.close()


def test_cli_adjudicate_and_gold(labelled):
    c = labelled
    path = str(c.path)
    item = _item(c, "task-1", "oracle")
    runner = CliRunner()
    got = runner.invoke(cli, ["label", "adjudicate", path, "--json"])
    assert got.exit_code == 0, got.output
    assert len(json.loads(got.output)) == 2
    got = runner.invoke(cli, ["label", "adjudicate", path, "--sort", "if"])
    assert got.exit_code == 0 and f"item {item}" in got.output.splitlines()[1]
    assert "alice" in got.output and "if 4" in got.output and "if 1" in got.output
    got = runner.invoke(
        cli, ["label", "gold", path, str(item), "if=4,vq=3,damage=no", "--note", "exact", "--by", "carol"]
    )
    assert got.exit_code == 0, got.output
    assert "version 1 of this item" in got.output
    got = runner.invoke(cli, ["label", "gold", path, str(item), "if=3,vq=3,damage=no", "--by", "dave"])
    assert "version 2 of this item" in got.output
    got = runner.invoke(cli, ["label", "gold", path, str(item), "if=9,vq=3,damage=no", "--by", "dave"])
    assert got.exit_code != 0 and "if must be" in got.output
    got = runner.invoke(cli, ["label", "adjudicate", path])
    assert "gold" in got.output and "by dave" in got.output
    got = runner.invoke(cli, ["label", "stats", path, "--gold", "--json", "--bootstrap", "20"])
    assert got.exit_code == 0, got.output
    assert json.loads(got.output)["gold"]["items"] == 1
    with Campaign.open(c.path) as again:
        assert [g.adjudicator for g in gold_history(again, item)] == ["carol", "dave"]
