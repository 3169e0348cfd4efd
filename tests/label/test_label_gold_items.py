"""Known-answer items on a real small campaign (oracle and no-op attempts): seeded from the
oracle/noop items or from a file, invisible in the annotators' queues, and ``arena label stats``
reporting each annotator's accuracy on them with the one below the threshold flagged.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.label.campaign import new_campaign
from pptarena.label.gold_items import (
    accuracy,
    is_right,
    known_answers,
    mark_known,
    read_expected_file,
    seed_from_file,
    seed_oracle_noop,
)
from pptarena.label.stats import campaign_stats, stats_text
from pptarena.label.store import Campaign, CampaignError
from tests.support.view_fixtures import small_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("gold-items-run"))


@pytest.fixture
def campaign(run, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0, seed=2,
                        out=tmp_path / "c.sqlite")  # fmt: skip
    yield c
    c.close()


def _label_all(c, who, level_of):
    for item_id, it in c.items.items():
        c.append(who, item_id, {"if": level_of(it), "vq": 3, "damage": "no"}, 1.0)


def test_oracle_noop_seeding_marks_existing_items_and_changes_no_queue(campaign):
    c = campaign
    queues = {a: c.queue(a) for a in c.annotators}
    marked = seed_oracle_noop(c, 4, seed=1, by="carol")
    assert len(marked) == 4
    known = known_answers(c)
    assert sorted(known) == marked
    agents = sorted(c.items[i].agent for i in marked)
    assert agents == ["noop", "noop", "oracle", "oracle"]  # alternately drawn
    for i in marked:
        want = {"if": 4} if c.items[i].agent == "oracle" else {"if": 0}
        assert known[i].expected == want and known[i].added_by == "carol"
    # the annotators' queues (order, sides) and the items are untouched: nothing tells them apart
    assert {a: c.queue(a) for a in c.annotators} == queues
    assert len(c.items) == 6
    # seeding again draws among the items not marked yet
    assert set(seed_oracle_noop(c, 10, by="carol")) == set(c.items) - set(marked)
    with pytest.raises(CampaignError, match="no oracle/noop item left"):
        seed_oracle_noop(c, 1, by="carol")
    # marks are append-only in the campaign file
    conn = sqlite3.connect(c.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM known_answers")
    conn.close()


def test_accuracy_flags_the_annotator_below_the_threshold(campaign):
    c = campaign
    seed_oracle_noop(c, 6, by="carol")
    _label_all(c, "alice", lambda it: 4 if it.agent == "oracle" else 0)  # always right
    _label_all(c, "bob", lambda it: 2)  # never right
    got = accuracy(c, min_accuracy=0.7)
    assert got["items"] == 6
    assert got["annotators"]["alice"] == {
        "queued": 6, "labelled": 6, "right": 6, "accuracy": 1.0, "flagged": False, "wrong": [],
    }  # fmt: skip
    assert got["annotators"]["bob"]["accuracy"] == 0.0 and got["annotators"]["bob"]["flagged"]
    assert got["annotators"]["bob"]["wrong"] == sorted(c.items)
    # within 2 levels bob's 2 is right for both oracle (4) and noop (0)
    assert accuracy(c, tolerance=2)["annotators"]["bob"]["accuracy"] == 1.0
    stats = campaign_stats(c, n_boot=20, min_accuracy=0.7)
    assert stats["known_answers"]["annotators"]["bob"]["flagged"]
    text = stats_text(stats)
    bob_line = next(line for line in text.splitlines() if line.strip().startswith("bob: 0 of 6 right"))
    assert "FLAGGED" in bob_line
    assert "FLAGGED" not in next(
        line for line in text.splitlines() if line.strip().startswith("alice: 6 of 6")
    )


def test_no_known_answer_block_without_seeding(campaign):
    assert "known_answers" not in campaign_stats(campaign, n_boot=20)
    assert accuracy(campaign)["items"] == 0


def test_expected_labels_from_a_csv_file(campaign, tmp_path):
    c = campaign
    f = tmp_path / "expected.csv"
    f.write_text(
        "task_id,agent,epoch,if,vq,damage\n"
        "task-1,noop,1,0,,no\n"
        "task-2,oracle,,4,,\n"
        "task-9,oracle,,4,,\n"  # no such task
        "task-1,oracle,,,,\n"  # no answer
    )
    marks, problems = read_expected_file(c, f)
    noop1 = next(i for i, it in c.items.items() if (it.task_id, it.agent) == ("task-1", "noop"))
    oracle2 = next(i for i, it in c.items.items() if (it.task_id, it.agent) == ("task-2", "oracle"))
    assert marks == [(noop1, {"if": 0, "damage": "no"}), (oracle2, {"if": 4})]
    assert problems == [
        "row 3: no campaign item matches it",
        "row 4: no expected answer given (if, vq or damage)",
    ]
    marked, _ = seed_from_file(c, f, by="carol")
    assert marked == sorted([noop1, oracle2]) and known_answers(c)[noop1].source == "file expected.csv"


def test_pairwise_expected_labels_from_json_with_agents_in_either_order(run, tmp_path):
    c, _ = new_campaign([run], protocol="pairwise", annotators=["alice", "bob"], overlap=1.0,
                        out=tmp_path / "p.sqlite")  # fmt: skip
    it = c.items[1]
    f = tmp_path / "expected.json"
    # the file names the pair's agents the other way round: its "a" is the campaign's "b"
    f.write_text(
        json.dumps([{"task_id": it.task_id, "agent": it.agent_b, "agent_b": it.agent, "choice": "a"}])
    )
    marked, problems = seed_from_file(c, f, by="carol")
    assert marked == [1] and problems == []
    assert known_answers(c)[1].expected == {"choice": "b"}
    # the oracle-vs-noop items of a pairwise campaign expect the oracle's side
    others = seed_oracle_noop(c, 10, by="carol")
    for i in others:
        want = "a" if c.items[i].agent == "oracle" else "b"
        assert known_answers(c)[i].expected == {"choice": want}
    c.close()


def test_unmarking_and_rules(campaign):
    c = campaign
    mark_known(c, [(1, {"if": 4})], source="hand", by="carol")
    mark_known(c, [(1, None)], source="hand", by="carol")
    assert known_answers(c) == {}
    with pytest.raises(CampaignError):
        mark_known(c, [(1, {"if": 7})], source="hand", by="carol")
    with pytest.raises(CampaignError):
        mark_known(c, [(99, {"if": 1})], source="hand", by="carol")
    assert is_right({"if": 3, "vq": 1, "damage": "no"}, {"if": 4, "damage": "no"}, tolerance=1)
    assert not is_right({"if": 3, "vq": 1, "damage": "yes"}, {"if": 3, "damage": "no"})


def test_cli_seed_and_stats(campaign, tmp_path):
    c = campaign
    _label_all(c, "alice", lambda it: 4 if it.agent == "oracle" else 0)
    _label_all(c, "bob", lambda it: 4)  # right on the oracle, wrong on the no-op
    path = str(c.path)
    runner = CliRunner()
    got = runner.invoke(cli, ["label", "seed", path])
    assert got.exit_code != 0 and "--from-file" in got.output
    got = runner.invoke(cli, ["label", "seed", path, "--oracle-noop", "4", "--seed", "3", "--by", "carol"])
    assert got.exit_code == 0, got.output
    assert "marked 4 known-answer item(s); the campaign has 4" in got.output
    got = runner.invoke(cli, ["label", "stats", path, "--json", "--bootstrap", "20"])
    people = json.loads(got.output)["known_answers"]["annotators"]
    assert people["alice"]["accuracy"] == 1.0 and people["bob"]["accuracy"] == 0.5
    assert people["bob"]["flagged"] and not people["alice"]["flagged"]
    got = runner.invoke(cli, ["label", "stats", path, "--min-accuracy", "0.4", "--bootstrap", "20"])
    assert got.exit_code == 0 and "FLAGGED" not in got.output and "bob: 2 of 4 right" in got.output
    with Campaign.open(c.path) as again:
        assert len(known_answers(again)) == 4
