"""Known-answer items on a real small campaign (oracle and no-op attempts): seeded from the
oracle/noop items or from a file, invisible in the annotators' queues, and ``arena label stats``
reporting each annotator's accuracy on them with the one below the threshold flagged.
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.label.campaign import new_campaign
from pptarena.label.gold_items import (
    accuracy,
    add_known_items,
    is_right,
    known_answers,
    mark_known,
    new_oracle_noop_items,
    read_expected_file,
    read_new_items_file,
    seed_from_file,
    seed_oracle_noop,
)
from pptarena.label.stats import campaign_stats, stats_text
from pptarena.label.store import Campaign, CampaignError, NewItem, insert_hidden_items
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


# ------------------------------------------------------------------------ new known-answer items


@pytest.fixture(scope="module")
def control(tmp_path_factory):
    """A second real run (oracle and no-op on 2 tasks): control attempts the campaign does not hold."""
    return small_run(tmp_path_factory.mktemp("gold-items-control"), count=2)


def _queues(c):
    return {a: c.queue(a) for a in c.annotators}


def test_new_oracle_noop_items_go_into_every_queue_at_hidden_reproducible_places(run, control, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=0.5, seed=2,
                        out=tmp_path / "c.sqlite")  # fmt: skip
    done = [i for i, _ in c.queue("alice")[:2]]
    for i in done:
        c.append("alice", i, {"if": 2, "vq": 2, "damage": "no"}, 1.0)
    before = _queues(c)
    twin = c.pack(tmp_path / "twin.sqlite")  # the same campaign, to add the same items to
    new = new_oracle_noop_items(c, 4, runs=[control], seed=5)
    assert [it.agent for it, _ in new].count("oracle") == 2 and len(new) == 4
    assert {it.run for it, _ in new} == {str(control.resolve())}
    added = add_known_items(c, new, seed=5, source="new item, test", by="carol")
    assert added == [7, 8, 9, 10]  # numbered after the campaign's 6 items
    known = known_answers(c)
    for (it, want), number in zip(new, added, strict=True):
        assert c.items[number].agent == it.agent and c.items[number].run == str(control.resolve())
        assert known[number].expected == want == {"if": 4 if it.agent == "oracle" else 0}
    after = _queues(c)
    for who in c.annotators:
        items = [i for i, _ in after[who]]
        assert sorted(set(items) - {i for i, _ in before[who]}) == added  # in every queue, once
        assert [i for i in items if i not in added] == [i for i, _ in before[who]]  # others keep their order
    # alice's two labelled items and her next open one keep their places; nothing lands before them
    assert after["alice"][:3] == before["alice"][:3]
    # their public ids are drawn like every other item's (15 digits, no order)
    assert all(10**14 <= c.public_id(i) < 10**15 for i in added)
    assert c.item_for_public(c.public_id(added[0])) == added[0]
    # reproducible: the same seed on the same campaign puts them at the same places
    with Campaign.open(twin) as again:
        assert add_known_items(again, new, seed=5, source="new item, test", by="carol") == added
        assert _queues(again) == after
    # and the runs' oracle / no-op attempts that are items now are not offered again
    with pytest.raises(CampaignError, match="no oracle/noop attempt that is not an item"):
        new_oracle_noop_items(c, 1, runs=[control])
    c.close()


def test_accuracy_and_stats_cover_the_new_items(run, control, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0,
                        out=tmp_path / "c.sqlite")  # fmt: skip
    added = add_known_items(c, new_oracle_noop_items(c, 4, runs=[control]), seed=1, source="t", by="carol")
    for who, right in (("alice", True), ("bob", False)):
        for number in added:
            level = 4 if (c.items[number].agent == "oracle") == right else 0
            c.append(who, number, {"if": level, "vq": 3, "damage": "no"}, 1.0)
    got = accuracy(c)
    assert got["items"] == 4
    assert got["annotators"]["alice"]["accuracy"] == 1.0 and not got["annotators"]["alice"]["flagged"]
    assert got["annotators"]["bob"]["wrong"] == added and got["annotators"]["bob"]["flagged"]
    stats = campaign_stats(c, n_boot=20, gold=True)
    assert stats["known_answers"]["annotators"]["bob"]["labelled"] == 4
    assert str(control.resolve()) in stats["judges"]  # the control run is one of the campaign's now
    c.close()


def test_new_items_from_a_file_with_problems_listed(run, control, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice"], out=tmp_path / "c.sqlite")
    f = tmp_path / "sub" / "new.csv"
    f.parent.mkdir()
    rel = os.path.relpath(control, f.parent)
    f.write_text(
        "run,task_id,agent,epoch,if,vq,damage\n"
        f"{rel},task-1,oracle,1,4,,no\n"  # the control run, named relative to the file
        ",task-2,noop,,0,,\n"  # no run: the campaign's runs, epoch 1
        ",task-7,noop,,0,,\n"  # no such attempt
        f"{rel},task-0,oracle,1,,,\n"  # no answer
        f"{rel},task-0,oracle,0,4,,\n"  # a bad epoch
    )
    new, problems = read_new_items_file(c, f)
    assert [(it.run, it.task_id, it.agent, it.epoch, e) for it, e in new] == [
        (str(control.resolve()), "task-1", "oracle", 1, {"if": 4, "damage": "no"}),
        (str(run.resolve()), "task-2", "noop", 1, {"if": 0}),
    ]
    assert problems == [
        "row 3: no attempt task-7/noop/epoch 1 with a prediction in the runs",
        "row 4: no expected answer given (if, vq or damage)",
        "row 5: epoch must be a whole number from 1",
    ]
    c.close()


def test_pairwise_new_items_from_a_file_and_from_oracle_noop_pairs(run, control, tmp_path):
    c, _ = new_campaign([run], protocol="pairwise", annotators=["alice", "bob"], overlap=1.0,
                        out=tmp_path / "p.sqlite")  # fmt: skip
    f = tmp_path / "new.json"
    f.write_text(json.dumps([
        {"run": str(control), "task_id": "task-0", "agent": "noop", "agent_b": "oracle", "choice": "b"},
        {"run": str(control), "task_id": "task-1", "agent": "noop", "choice": "a"},  # no agent_b
    ]))  # fmt: skip
    new, problems = read_new_items_file(c, f)
    assert problems == ["row 2: a pairwise item needs agent_b"]
    ((it, want),) = new
    assert (it.agent, it.agent_b, it.run_b, want) == (
        "noop",
        "oracle",
        str(control.resolve()),
        {"choice": "b"},
    )
    first = add_known_items(c, new, seed=3, source="file", by="carol")
    pairs = new_oracle_noop_items(c, 5, runs=[control], seed=3)
    assert len(pairs) == 1  # task-0's pair is an item now: task-1's is the one left
    more = add_known_items(c, pairs, seed=3, source="pairs", by="carol")
    known = known_answers(c)
    for number in first + more:
        it = c.items[number]
        assert known[number].expected == {"choice": "a" if it.agent == "oracle" else "b"}
    # the sides are drawn per annotator, as at creation
    assert all(number in dict(c.queue(a)) for a in c.annotators for number in first + more)
    c.close()


def test_adding_is_all_or_nothing(run, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice"], out=tmp_path / "c.sqlite")
    before, items = _queues(c), dict(c.items)
    with pytest.raises(CampaignError, match="expected if"):
        add_known_items(c, [(NewItem(str(run), "task-1", "oracle"), {"if": 9})], seed=0, source="t", by="c")
    with pytest.raises(CampaignError, match="no known-answer item"):
        add_known_items(c, [], seed=0, source="t", by="c")

    def fail(conn, numbers):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        insert_hidden_items(c, [NewItem(str(run), "task-1", "oracle")], seed=0, after=fail)
    assert _queues(c) == before and c.items == items
    with Campaign.open(c.path) as again:
        assert len(again.items) == len(items)
    c.close()


def test_cli_adds_new_items(run, control, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice", "bob"], overlap=1.0,
                        out=tmp_path / "c.sqlite")  # fmt: skip
    c.close()
    path, runner = str(c.path), CliRunner()
    got = runner.invoke(cli, ["label", "seed", path, "--oracle-noop", "1", "--run", str(control)])
    assert got.exit_code == 2 and "--run goes with" in got.output
    got = runner.invoke(cli, ["label", "seed", path, "--add-oracle-noop", "3", "--run", str(control),
                              "--seed", "4", "--by", "carol"])  # fmt: skip
    assert got.exit_code == 0, got.output
    assert "added 3 new known-answer item(s) to each of 2 queue(s); the campaign has 3" in got.output
    bad = tmp_path / "bad.csv"
    bad.write_text("task_id,agent,if\ntask-9,oracle,4\n")
    got = runner.invoke(cli, ["label", "seed", path, "--add-from-file", str(bad)])
    assert got.exit_code == 1 and "skipped: row 1: no attempt task-9" in got.output
    assert "no item added" in got.output
    with Campaign.open(c.path) as again:
        assert len(again.items) == 9 and len(again.queue("alice")) == 9
