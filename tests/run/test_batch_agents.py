"""Which agents batch mode batches (``[[agents]] batch``, the built-ins' one-call declaration), and the
pair's :class:`~pptarena.run.batches.BatchWait`: the slot it gives back while it waits, the seconds
its timeout does not count, and a pair that ends while its call still waits."""

from __future__ import annotations

import threading
import time

import pytest

from pptarena.run.batches import BatchWait
from pptarena.run.configuration.batching import batches_agent, declares_one_call, unbatched_asks
from pptarena.run.configuration.config import ConfigError, load_config
from pptarena.run.configuration.registry import get_registry
from tests.support.config import demo_dataset, run_toml, use, write_run_config


def agents_of(tmp_path, *agents):
    cfg = write_run_config(
        tmp_path / "run.toml",
        run_toml(dataset=demo_dataset(), agents=list(agents), judges=["structural"], renderer="libreoffice"),
    )
    return load_config(cfg, get_registry()).agents


def test_batch_mode_batches_what_the_table_says_and_the_built_ins_that_make_one_call(tmp_path):
    code, code_loops, xml_model, xml_heur, hybrid, forced, refused = agents_of(
        tmp_path,
        use("code", model="scripted/x"),
        use("code", label="code-loops", model="scripted/x", loops=2),
        use("xml", model="scripted/x"),
        use("xml", label="xml-heur", model="scripted/x", selection="heuristic"),
        use("hybrid", model="scripted/x"),
        use("hybrid", label="hybrid-forced", model="scripted/x", batch=True),
        use("code", label="code-refused", model="scripted/x", batch=False),
    )
    assert [declares_one_call(a) for a in (code, code_loops, xml_model, xml_heur, hybrid)] == [
        True,
        False,
        False,
        True,
        False,
    ]
    batched = {
        a.label
        for a in (code, code_loops, xml_model, xml_heur, hybrid, forced, refused)
        if batches_agent(a, True)
    }
    assert batched == {"code", "xml-heur", "hybrid-forced"}
    # outside batch mode nothing is batched, and a table that asked is told so
    assert not any(batches_agent(a, False) for a in (code, forced))
    assert unbatched_asks([code, forced, refused], False) == [
        "Agent 'hybrid-forced' asks for batch = true, but the run is not in batch mode "
        "([run] batch = true or arena run --batch): its calls go out directly."
    ]
    assert unbatched_asks([forced], True) == []


def test_a_third_party_agent_is_batched_only_by_its_table(tmp_path, fake_plugins):
    from tests.support.config import fake_run_toml

    cfg = write_run_config(
        tmp_path / "run.toml",
        fake_run_toml(
            1, [use("asker", model="scripted/x"), use("asker", label="asked", model="scripted/x", batch=True)]
        ),
    )
    plain, asked = load_config(cfg, get_registry()).agents
    assert not declares_one_call(plain) and not batches_agent(plain, True)
    assert batches_agent(asked, True)
    # the key is the harness's: it never reaches the agent's options
    assert "batch" not in asked.options.model_dump()


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]"])
def test_batch_must_be_true_or_false(tmp_path, value):
    cfg = tmp_path / "run.toml"
    cfg.write_text(
        run_toml(
            dataset=demo_dataset(), agents=[use("code", model="scripted/x")], judges=["structural"]
        ).replace('use = "code"', f'use = "code"\nbatch = {value}'),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"agents\[0\]\.batch: expected true or false"):
        load_config(cfg, get_registry())


def test_a_waiting_pair_gives_its_slot_to_another_and_takes_one_back_before_going_on():
    slots = threading.BoundedSemaphore(1)
    slots.acquire()  # pair A runs
    wait = BatchWait(release=slots.release, acquire=slots.acquire)
    wait.begin()  # A's call waits on a batch: its slot is free for B
    assert slots.acquire(timeout=1), "the waiting pair kept its slot"
    ended = threading.Event()

    def answer():
        wait.end()  # A's answer came: A needs a slot again, and B holds the only one
        ended.set()

    t = threading.Thread(target=answer)
    t.start()
    time.sleep(0.3)
    assert not ended.is_set(), "the answered pair went on without a slot"
    slots.release()  # B is done
    t.join(5)
    assert ended.is_set()
    assert wait.seconds() >= 0.3  # waiting for the slot counts as waiting too
    assert wait.close() is True  # A holds a slot again: the attempt gives it back
    slots.release()
    assert slots.acquire(timeout=0.1) and slots.acquire(timeout=0.1) is False  # one slot, as at the start


def test_a_pair_that_ends_while_its_call_waits_leaves_no_slot_behind():
    slots = threading.BoundedSemaphore(2)
    slots.acquire()
    wait = BatchWait(release=slots.release, acquire=slots.acquire)
    wait.begin()
    assert wait.close() is False  # timed out while waiting: its slot was already given back
    wait.end()  # the late answer takes a slot for a pair that is gone, and gives it back at once
    assert slots.acquire(timeout=0.1) and slots.acquire(timeout=0.1)
    with pytest.raises(ValueError):
        slots.release(), slots.release(), slots.release()  # exactly two slots: a third release is too many


def test_calls_waiting_at_the_same_time_count_once():
    wait = BatchWait()
    wait.begin()
    wait.begin()
    time.sleep(0.2)
    wait.end()
    during = wait.seconds()
    time.sleep(0.2)
    wait.end()
    total = wait.seconds()
    assert 0.2 <= during < total < 1.0
    time.sleep(0.2)
    assert wait.seconds() == total  # nothing waits: the count stands still


def test_a_run_resumes_when_an_agent_table_only_changes_its_batch_key():
    from pptarena.run.folder.resume import resume_conflicts

    before = {"agents": [{"use": "code", "model": "openai/x"}]}
    assert resume_conflicts(before, {"agents": [{"use": "code", "model": "openai/x", "batch": True}]}) == []
    assert resume_conflicts(before, {"agents": [{"use": "code", "model": "openai/y", "batch": True}]}) == [
        "agent 'code' differs"
    ]


def test_a_jailed_pair_waiting_for_a_free_worker_gives_its_slot_back(monkeypatch):
    """Pairs whose batch was answered hold workers and need a slot; a pair holding the only slot while
    it waits for one of their workers would make both wait forever."""
    from pptarena.run.jail.jail_pool import JailPool

    pool = JailPool(1)
    entered, free = threading.Event(), threading.Event()

    def checkout(key, agent):
        entered.set()
        free.wait(5)
        raise RuntimeError("no worker in this test")

    monkeypatch.setattr(pool, "_checkout", checkout)
    slots = threading.BoundedSemaphore(1)
    slots.acquire()
    wait = BatchWait(release=slots.release, acquire=slots.acquire)
    errors = []

    def pair():
        try:
            pool.run_pair(
                type("A", (), {"label": "a"})(),
                None,
                type("W", (), {"dir": "."})(),
                None,
                5.0,
                False,
                wait=wait,
            )
        except RuntimeError as exc:
            errors.append(exc)

    t = threading.Thread(target=pair)
    t.start()
    assert entered.wait(5)
    assert slots.acquire(timeout=2), "the pair kept its slot while it waited for a worker"
    slots.release()
    free.set()
    t.join(5)
    assert errors and wait.close() is True  # after the checkout the pair holds a slot again


def test_the_wait_goes_on_counting_while_the_answered_pair_waits_for_a_slot():
    """Else the pair's deadline would jump back by its whole batch wait the moment its answer came
    with no slot free, and it would time out at once."""
    slots = threading.BoundedSemaphore(1)
    slots.acquire()
    wait = BatchWait(release=slots.release, acquire=slots.acquire)
    wait.begin()
    slots.acquire()  # another pair takes the slot
    t = threading.Thread(target=wait.end)  # the answer comes: the pair needs the slot back
    t.start()
    time.sleep(0.2)
    during = wait.seconds()
    time.sleep(0.2)
    assert 0.2 <= during < wait.seconds(), "the wait stopped counting while the slot was taken"
    slots.release()
    t.join(5)
    assert not t.is_alive() and wait.close() is True
    slots.release()


def test_a_call_that_begins_while_the_pair_takes_its_slot_back_leaks_no_slot():
    slots = threading.BoundedSemaphore(2)
    slots.acquire()  # the pair's slot; one more is free
    wait = BatchWait(release=slots.release, acquire=slots.acquire)
    wait.begin()  # call 1 waits: both slots free
    slots.acquire()
    slots.acquire()  # two other pairs hold them
    t = threading.Thread(target=wait.end)  # call 1 answered: the pair blocks for a slot
    t.start()
    time.sleep(0.1)
    wait.begin()  # call 2 of the same pair starts waiting meanwhile
    slots.release()  # one other pair ends: the blocked end() gets the slot, and gives it back (call 2 waits)
    t.join(5)
    assert not t.is_alive()
    assert slots.acquire(timeout=1), "the pair kept a slot while its second call waits"
    slots.release()
    wait.end()  # call 2 answered: the pair takes a slot again
    assert wait.close() is True
    slots.release()  # the pair ends
    slots.release()  # the other pair ends
    assert slots.acquire(timeout=0.1) and slots.acquire(timeout=0.1) and not slots.acquire(timeout=0.1)


def test_a_pairs_requests_are_its_own_and_repeat_on_a_resumed_attempt():
    first, second = BatchWait(salt="tasks/a/t1/epoch-1"), BatchWait(salt="tasks/a/t1/epoch-2")
    assert first.salted("k") != second.salted("k")  # two epochs asking the same: two requests
    again = first.salted("k")
    assert again != first.salted("k")  # the same pair asking the same twice: two requests
    resumed = BatchWait(salt="tasks/a/t1/epoch-1")
    assert resumed.salted("k") == BatchWait(salt="tasks/a/t1/epoch-1").salted("k")  # found again on resume
