"""The report's fast paths give what the slow ones gave (issue 18): shared bootstrap draws and
memoized intervals, the stored summary reused only when current, one-call file reads, pages
overwritten in place.
"""

from __future__ import annotations

import json
import os
import random
import threading

import numpy as np
import pytest

from pptarena.report import data as report_data
from pptarena.report import verdicts
from pptarena.report.data import load_run
from pptarena.report.fileio import read_regular, text_lines, write_derived
from pptarena.run.folder import results
from pptarena.run.folder.results import read_results, summarize_results
from pptarena.run.folder.rundir import RunDir
from pptarena.run.statistics import resample
from pptarena.run.statistics.stats import bootstrap_mean_ci
from tests.support.config import fake_dataset, fake_run_toml, write_run_config


def reference_bootstrap(values, n_boot=2000, seed=0, level=0.95):
    """The interval as the bootstrap computed it before draws were shared (issue 16's code)."""
    a = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    chunk = max(1, 2_000_000 // len(a))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, len(a), size=(stop - start, len(a)))
        means[start:stop] = a[idx].mean(axis=1)
    lo, hi = np.percentile(means, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return [round(float(lo), 4), round(float(hi), 4)]


@pytest.mark.slow
@pytest.mark.parametrize("cache", ["cached", "uncached"])
def test_bootstrap_with_shared_draws_equals_the_original_computation(monkeypatch, cache):
    if cache == "uncached":
        monkeypatch.setattr(resample, "MAX_CACHED_ENTRIES", 0)
    rng = random.Random(11)
    for n, n_boot, seed in [(2, 50, 0), (37, 2000, 0), (1000, 2000, 3), (4001, 700, 9), (5000, 2000, 0)]:
        values = [round(rng.random(), 3) for _ in range(n)]
        want = reference_bootstrap(values, n_boot, seed)
        assert bootstrap_mean_ci(values, n_boot=n_boot, seed=seed) == want
        # the same length again (shared draws) with other values, then the same values (memoized)
        other = [round(rng.random(), 2) for _ in range(n)]
        assert bootstrap_mean_ci(other, n_boot=n_boot, seed=seed) == reference_bootstrap(other, n_boot, seed)
        again = bootstrap_mean_ci(values, n_boot=n_boot, seed=seed)
        assert again == want
        again.append(99.0)  # a caller changing its result changes nobody else's
        assert bootstrap_mean_ci(values, n_boot=n_boot, seed=seed) == want


def test_bootstrap_draw_cache_stays_within_its_bound(monkeypatch):
    monkeypatch.setattr(resample, "MAX_CACHED_ENTRIES", 10 * 300)
    monkeypatch.setattr(resample, "_draws", type(resample._draws)())
    for n in (100, 200, 150, 120):
        bootstrap_mean_ci(list(np.linspace(0, 1, n)), n_boot=10, seed=1)
        assert sum(k[0] * k[1] for k in resample._draws) <= 10 * 300
    assert list(resample._draws) == [(150, 10, 1), (120, 10, 1)]  # the oldest went first


def test_bootstrap_is_the_same_from_several_threads():
    values = [[round(random.Random(i).random(), 3) for _ in range(300)] for i in range(8)]
    want = [reference_bootstrap(v, 500, 4) for v in values]
    got: dict[int, list[float] | None] = {}

    def work(i: int) -> None:
        got[i] = bootstrap_mean_ci(values[i], n_boot=500, seed=4)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[i] for i in range(8)] == want


def write_run(run_dir, pairs=12, manifest=None):
    layout = RunDir(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    layout.manifest.write_text(json.dumps(manifest or {"agents": ["a", "b"], "judges": ["j"]}))
    rng = random.Random(5)
    lines = []
    for k in range(pairs):
        score = round(rng.random(), 3)
        lines.append(
            {
                "agent": "ab"[k % 2],
                "task_id": f"t{k // 2}",
                "status": "scored",
                "scores": {"j": {"score": score, "metrics": {"success": score > 0.5}}},
                "duration_s": 1.0,
            }
        )
    layout.results.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return layout


def test_a_current_summary_json_is_reused_and_equals_the_recomputed_one(tmp_path, monkeypatch):
    layout = write_run(tmp_path / "run")
    stored = summarize_results(read_results(layout.results))
    assert stored.source["rows"] == 12 and stored.source["revision"] == results.SUMMARY_REVISION
    recomputed = load_run(layout.root).summary  # no summary.json yet
    # as the runner writes it
    layout.summary.write_text(json.dumps({**stored.to_json(), "budget": {"max_cost": 1.0}}))

    def refuse(*args, **kwargs):
        raise AssertionError("the summary was recomputed")

    monkeypatch.setattr(results, "summarize_results", refuse)
    reused = load_run(tmp_path / "run").summary
    # "budget" is the runner's, left out
    assert reused.to_json() == recomputed.to_json() == json.loads(json.dumps(stored.to_json()))
    assert reused.budget is None


@pytest.mark.parametrize("change", ["new line", "changed line", "other options", "older revision", "broken"])
def test_a_stale_summary_json_is_recomputed(tmp_path, monkeypatch, change):
    layout = write_run(tmp_path / "run")
    stored = summarize_results(read_results(layout.results))
    if change == "older revision":
        stored.source["revision"] = results.SUMMARY_REVISION - 1
    layout.summary.write_text("{not json" if change == "broken" else json.dumps(stored.to_json()))
    if change == "new line":
        with layout.results.open("a") as fh:
            fh.write(json.dumps({"agent": "a", "task_id": "t9", "status": "timeout", "scores": {}}) + "\n")
    elif change == "changed line":
        text = layout.results.read_text()
        layout.results.write_text(text.replace('"duration_s": 1.0', '"duration_s": 2.0', 1))
    elif change == "other options":
        layout.manifest.write_text(json.dumps({"config": {"run": {"bootstrap": 500}}}))
    calls = []
    original = results.summarize_results
    monkeypatch.setattr(results, "summarize_results", lambda *a, **k: calls.append(1) or original(*a, **k))
    summary = load_run(tmp_path / "run").summary
    assert calls == [1]
    assert summary.source == results.rows_source(read_results(layout.results))


def test_read_regular_reads_files_and_refuses_the_rest(tmp_path):
    f = tmp_path / "v.json"
    f.write_bytes(b'{"a": 1}')
    assert read_regular(f, 100) == b'{"a": 1}'
    assert read_regular(f, 3) is None  # larger than the limit
    assert read_regular(tmp_path / "missing", 100) is None
    assert read_regular(tmp_path, 100) is None  # a folder
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_regular(fifo, 100) is None  # never blocks on a FIFO with no writer


def test_text_lines_split_like_a_text_mode_file(tmp_path):
    data = b'{"a":1}\r\n{"b":2}\rplain\n\xff bad utf-8\n\nlast without newline'
    path = tmp_path / "log"
    path.write_bytes(data)
    with path.open(encoding="utf-8", errors="replace") as fh:
        assert text_lines(data) == list(fh)
    assert text_lines(b"") == [] and text_lines(b"x\n") == ["x\n"]


def test_agent_log_html_is_the_same_read_at_once_or_streamed(tmp_path, monkeypatch):
    lines = [json.dumps({"t": 10.0 + i, "event": "step", "text": f"<b>{i}</b>"}) for i in range(250)]
    (tmp_path / "agent.log.jsonl").write_text("\n".join([*lines[:3], "not json", *lines[3:]]) + "\r\n")
    at_once = verdicts.agent_log_html(tmp_path)
    monkeypatch.setattr(verdicts, "SMALL_LOG_BYTES", 10)
    assert verdicts.agent_log_html(tmp_path) == at_once
    assert "Agent log (251 events)" in at_once and "51 more event(s)" in at_once  # 200 shown
    assert "(unreadable line)" in at_once and "&lt;b&gt;" in at_once
    assert verdicts.agent_log_html(tmp_path / "nowhere") == ""


def test_esc_is_html_escape_of_the_clipped_text():
    from html import escape

    for text in ["a<b>&\"'c", None, 12.5, "x" * 50, "é ' \" < > &amp;"]:
        for limit in (4, 4000):
            assert verdicts.esc(text, limit) == escape(verdicts.clip(text, limit))


def test_write_derived_overwrites_in_place_and_never_through_a_symlink(tmp_path):
    page = tmp_path / "tasks-0001.html"
    write_derived(page, "a much longer first version ✓")
    inode = page.stat().st_ino
    write_derived(page, "short ✓")
    assert page.read_text(encoding="utf-8") == "short ✓" and page.stat().st_ino == inode
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "tasks-0002.html"
    link.symlink_to(victim)
    write_derived(link, "page")
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text() == "page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks-0001.html", "tasks-0002.html", "victim.txt"]


def test_verdicts_of_a_pair_read_through_the_fast_reader(tmp_path):
    layout = write_run(tmp_path / "run", pairs=2)
    data = load_run(tmp_path / "run")
    folder = layout.pair("a", "t0")
    folder.mkdir(parents=True)
    assert data.verdicts("a", "t0") == {}
    (folder / "verdicts.json").write_text('{"verdicts": {"j": {"score": 1}}}')
    assert data.verdicts("a", "t0") == {"verdicts": {"j": {"score": 1}}}
    (folder / "verdicts.json").write_bytes(b'\xff{"verdicts": 1}')
    assert data.verdicts("a", "t0") == {}
    (folder / "verdicts.json").write_text("[1, 2]")
    assert data.verdicts("a", "t0") == {}
    assert report_data.MAX_JSON_BYTES > 0


@pytest.mark.slow
def test_the_report_reuses_the_summary_a_real_run_wrote(tmp_path, fake_plugins, monkeypatch):
    """End to end: ``arena run`` writes summary.json, the report takes it instead of recomputing."""
    import subprocess
    import sys

    from pptarena.run.statistics.summary_stats import stats_options

    text = fake_run_toml(
        3, ["noop", "oracle"], dataset=fake_dataset(3, root="d"), run={"bootstrap": 300, "seed": 4}
    )
    cfg = write_run_config(tmp_path / "c.toml", text)
    out = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    layout = RunDir(tmp_path / "r")
    manifest = json.loads(layout.manifest.read_text())
    want = summarize_results(read_results(layout.results), opts=stats_options(manifest["config"]["run"]))
    monkeypatch.setattr(results, "summarize_results", lambda *a, **k: pytest.fail("recomputed"))
    assert load_run(layout.root).summary.to_json() == json.loads(json.dumps(want.to_json()))


@pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and two cores")
def test_run_shared_does_every_item_once_across_two_processes(tmp_path):
    from pptarena.report.forkwork import can_fork, run_shared

    if not can_fork():
        pytest.skip("this test process runs other threads")
    pids = {}

    def work(i):
        (tmp_path / f"item-{i}").write_text(str(os.getpid()))

    run_shared(list(range(9)), work, workers=2)
    for i in range(9):
        pids[i] = int((tmp_path / f"item-{i}").read_text())
    assert sorted(int(p.name.split("-")[1]) for p in tmp_path.iterdir()) == list(range(9))
    assert {pids[i] for i in range(0, 9, 2)} == {os.getpid()}  # the parent's share
    assert len({pids[i] for i in range(1, 9, 2)}) == 1 and pids[1] != os.getpid()  # one child's


def test_run_shared_returns_both_processes_results_in_the_items_order():
    from pptarena.report.forkwork import can_fork, run_shared

    if not can_fork():
        pytest.skip("this test process runs other threads")
    got = run_shared(list(range(7)), lambda i: {"item": i, "pid": os.getpid()}, workers=2)
    assert [r["item"] for r in got] == list(range(7))
    assert {r["pid"] for r in got[0::2]} == {os.getpid()} and os.getpid() not in {r["pid"] for r in got[1::2]}
    assert run_shared([3, 1, 2], lambda i: i * 10, workers=1) == [30, 10, 20]


@pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and two cores")
def test_run_shared_reports_an_error_of_either_process(tmp_path):
    from pptarena.report.forkwork import WorkerFailed, can_fork, run_shared

    if not can_fork():
        pytest.skip("this test process runs other threads")

    def fail_on(bad):
        def work(i):
            if i == bad:
                raise OSError(f"disk full at {i}")
            (tmp_path / f"{bad}-{i}").write_text("ok")

        return work

    with pytest.raises(WorkerFailed, match="OSError: disk full at 3"):
        run_shared(list(range(6)), fail_on(3), workers=2)  # item 3 is the child's
    with pytest.raises(OSError, match="disk full at 2"):
        run_shared(list(range(6)), fail_on(2), workers=2)  # item 2 is the parent's
    assert (tmp_path / "2-5").read_text() == "ok"  # the child finished its share and was waited for


def test_run_shared_stays_in_process_with_one_worker_or_other_threads(tmp_path):
    from pptarena.report.forkwork import run_shared

    seen = []
    run_shared([1, 2, 3], lambda i: seen.append((i, os.getpid())), workers=1)
    assert seen == [(1, os.getpid()), (2, os.getpid()), (3, os.getpid())]
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        seen.clear()
        run_shared([1, 2, 3], lambda i: seen.append(i), workers=2)  # never forks beside a thread
        assert seen == [1, 2, 3]
    finally:
        stop.set()
        helper.join()
