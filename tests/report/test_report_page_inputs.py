"""Task pages are rebuilt only when their inputs changed (issue 35, item 5): a result line, a file
the page read from a pair folder, the page file itself. What is skipped is exactly what a full
rebuild would write again, and a pair folder turned hostile between two reports is refused as on
the first report.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pptarena.report import html, pages
from pptarena.report.data import load_run
from pptarena.report.pageinputs import RECORD_NAME, load_record
from pptarena.report.pages import PageStats, page_name, write_pages
from pptarena.run.folder.rundir import RunDir

HOST_SECRET = "host-only-text-0451"
TASKS = 45  # three pages of 20 tasks
AGENTS = ("noop", "oracle")


def task_id(k: int) -> str:
    return f"task-{k:03d}"


def result_line(agent: str, task: str, score: float) -> dict:
    return {
        "schema_version": 1,
        "agent": agent,
        "task_id": task,
        "status": "scored",
        "scores": {"rubric": {"score": score, "metrics": {}}},
        "duration_s": 1.5,
        "metadata": {"category": "text"},
    }


def write_lines(run: Path, lines: list[dict]) -> None:
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A finished run of 45 tasks x 2 agents, each pair with its verdicts and agent log."""
    run = tmp_path / "runs" / "run"
    layout = RunDir(run)
    run.mkdir(parents=True)
    layout.manifest.write_text(json.dumps({"agents": list(AGENTS), "judges": ["rubric"]}))
    lines = []
    for k in range(TASKS):
        for agent in AGENTS:
            score = round((k % 7) / 7, 3)
            lines.append(result_line(agent, task_id(k), score))
            folder = layout.pair(agent, task_id(k))
            folder.mkdir(parents=True)
            verdict = {"rubric": {"score": score, "explanation": f"verdict of {agent} on {k}"}}
            (folder / "verdicts.json").write_text(json.dumps({"verdicts": verdict}))
            (folder / "agent.log.jsonl").write_text(json.dumps({"t": 1.0, "event": "step", "n": k}) + "\n")
    write_lines(run, lines)
    return run


def report(run: Path) -> PageStats:
    """Write the task pages as ``arena report`` does (index beside the run); what was built and skipped."""
    stats = PageStats()
    parts = pages.HtmlParts(html.CSS, html.table_html, html.plots_html, html.task_html, html._anchor)
    write_pages(load_run(run), {}, None, run / html.REPORT_NAME, parts, stats=stats)
    return stats


def page_files(run: Path) -> dict[str, bytes]:
    folder = run / "report"
    return {p.name: p.read_bytes() for p in sorted(folder.glob("tasks-*.html"))}


def full_rebuild(run: Path, tmp_path: Path) -> dict[str, bytes]:
    """The pages a report writes from nothing: the run copied to a fresh folder of the same name."""
    fresh = tmp_path / "fresh" / run.name
    shutil.copytree(run, fresh, symlinks=True, ignore=shutil.ignore_patterns("report"))
    stats = report(fresh)
    assert stats.skipped == []
    pages_now = page_files(fresh)
    return {name: data.replace(str(fresh).encode(), str(run).encode()) for name, data in pages_now.items()}


def pair_folder(run: Path, agent: str, k: int) -> Path:
    return RunDir(run).pair(agent, task_id(k))


def test_a_second_report_rebuilds_no_page_and_writes_the_same_pages(run):
    first = report(run)
    assert first.built == [page_name(n) for n in (1, 2, 3)] and first.skipped == []
    before = page_files(run)
    second = report(run)
    assert second.built == [] and sorted(second.skipped) == sorted(first.built)
    assert page_files(run) == before
    assert set(load_record(run / "report")) == set(before)


def test_a_changed_result_line_rebuilds_only_its_page(run, tmp_path):
    report(run)
    before = page_files(run)
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    changed = next(line for line in lines if line["task_id"] == task_id(25) and line["agent"] == "oracle")
    changed["scores"]["rubric"]["score"] = 0.999  # task 25 is on page 2
    write_lines(run, lines)
    stats = report(run)
    assert stats.built == [page_name(2)]
    now = page_files(run)
    assert now[page_name(2)] != before[page_name(2)] and "0.999" in now[page_name(2)].decode()
    assert {k: v for k, v in now.items() if k != page_name(2)} == {
        k: v for k, v in before.items() if k != page_name(2)
    }
    assert now == full_rebuild(run, tmp_path)


def test_a_changed_pair_file_rebuilds_only_its_page(run, tmp_path):
    report(run)
    log = pair_folder(run, "noop", 44) / "agent.log.jsonl"  # page 3
    log.write_text(json.dumps({"t": 1.0, "event": "rewritten-step"}) + "\n")
    stats = report(run)
    assert stats.built == [page_name(3)]
    assert "rewritten-step" in page_files(run)[page_name(3)].decode()
    # a file the page found missing appears: its page is rebuilt too
    trajectory = pair_folder(run, "oracle", 3) / "trajectory"
    trajectory.mkdir()
    (trajectory / "trajectory.jsonl").write_text(json.dumps({"step": 1, "actions": ["click"]}) + "\n")
    assert report(run).built == [page_name(1)]
    assert "GUI trajectory" in page_files(run)[page_name(1)].decode()
    assert page_files(run) == full_rebuild(run, tmp_path)


def test_a_page_edited_or_removed_is_rebuilt(run):
    report(run)
    before = page_files(run)
    page = run / "report" / page_name(1)
    page.write_text("defaced")
    (run / "report" / page_name(3)).unlink()
    stats = report(run)
    assert sorted(stats.built) == [page_name(1), page_name(3)]
    assert page_files(run) == before


def test_a_damaged_record_means_a_full_rebuild(run):
    report(run)
    (run / "report" / RECORD_NAME).write_text("{not json")
    assert len(report(run).built) == 3
    (run / "report" / RECORD_NAME).unlink()
    (run / "report" / RECORD_NAME).symlink_to(run / "results.jsonl")  # never followed
    assert len(report(run).built) == 3
    assert not (run / "report" / RECORD_NAME).is_symlink()  # replaced by a new file


@pytest.mark.parametrize("workers", [1, 2])
def test_the_whole_command_builds_only_what_changed(run, monkeypatch, tmp_path, workers):
    """Through ``write_report`` (what ``arena report`` calls; with 2 workers a forked child builds
    every other page and sends its record back): counted by the page builder itself, in a file
    both processes append to."""
    counter = tmp_path / "built.txt"
    real = pages.task_page

    def counting(*args, **kwargs):
        with open(counter, "a") as fh:
            fh.write(f"{args[6]}\n")  # the page number
        return real(*args, **kwargs)

    def built() -> list[int]:
        numbers = sorted(int(n) for n in counter.read_text().split()) if counter.exists() else []
        counter.unlink(missing_ok=True)
        return numbers

    monkeypatch.setattr(pages, "task_page", counting)
    html.write_report(run, render=False, layout="pages", workers=workers)
    assert built() == [1, 2, 3]
    html.write_report(run, render=False, layout="pages", workers=workers)
    assert built() == []
    (pair_folder(run, "oracle", 0) / "verdicts.json").write_text(
        json.dumps({"verdicts": {"rubric": {"score": 0.5, "explanation": "judged again"}}})
    )
    (pair_folder(run, "oracle", 21) / "verdicts.json").unlink()
    html.write_report(run, render=False, layout="pages", workers=workers)
    assert built() == [1, 2]
    assert "judged again" in (run / "report" / page_name(1)).read_text()


# ---------------------------------------- a pair folder turned hostile between reports


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host folder whose files look like a pair's: nothing of it may reach a page."""
    folder = tmp_path / "host"
    folder.mkdir()
    verdict = {"verdicts": {"rubric": {"score": 1.0, "explanation": HOST_SECRET}}}
    (folder / "verdicts.json").write_text(json.dumps(verdict))
    (folder / "agent.log.jsonl").write_text(json.dumps({"event": HOST_SECRET}) + "\n")
    return folder


def test_a_pair_folder_swapped_for_a_link_is_refused_and_its_page_rebuilt(run, host):
    report(run)
    folder = pair_folder(run, "oracle", 30)  # page 2
    shutil.rmtree(folder)
    folder.symlink_to(host, target_is_directory=True)
    stats = report(run)
    assert stats.built == [page_name(2)]
    assert HOST_SECRET not in page_files(run)[page_name(2)].decode()
    assert report(run).built == []  # refused the same way again: nothing new to build


def test_a_link_in_place_of_the_agents_folder_is_refused(run, host):
    report(run)
    agent_folder = pair_folder(run, "noop", 0).parent
    away = agent_folder.with_name("noop-away")
    agent_folder.rename(away)
    agent_folder.symlink_to(away, target_is_directory=True)  # every noop pair now behind a link
    stats = report(run)
    assert len(stats.built) == 3
    text = "".join(p.decode() for p in page_files(run).values())
    assert "verdict of noop" not in text and "verdict of oracle" in text


@pytest.mark.parametrize("name", ["verdicts.json", "agent.log.jsonl"])
def test_a_linked_file_or_a_fifo_in_a_pair_folder_is_refused_after_a_first_report(run, host, name):
    report(run)
    target = pair_folder(run, "noop", 10) / name  # page 1
    target.unlink()
    target.symlink_to(host / name)
    assert report(run).built == [page_name(1)]
    linked = page_files(run)[page_name(1)]
    assert HOST_SECRET not in linked.decode()
    target.unlink()
    os.mkfifo(target)  # refused at once, never blocks the report
    assert report(run).built == [page_name(1)]
    assert page_files(run)[page_name(1)] == linked  # shown as the link was: not at all
    assert report(run).built == []


def test_an_oversize_verdicts_file_is_refused_after_a_first_report(run, monkeypatch):
    from pptarena.report import data as report_data

    report(run)
    target = pair_folder(run, "noop", 10) / "verdicts.json"  # page 1
    big = {"verdicts": {"rubric": {"score": 0.1, "explanation": "oversize-verdict " + "x" * 1000}}}
    target.write_text(json.dumps(big))
    monkeypatch.setattr(report_data, "MAX_JSON_BYTES", 1000)  # the others (< 100 bytes) still read
    assert report(run).built == [page_name(1)]
    page = page_files(run)[page_name(1)].decode()
    assert "oversize-verdict" not in page and "verdict of noop on 11" in page
    assert report(run).built == []


def test_every_code_file_a_page_depends_on_exists():
    """A moved module must not silently drop out of the page key (it would keep stale pages)."""
    from pathlib import Path

    import pptarena.report.pageinputs as pageinputs

    package = Path(pageinputs.__file__).resolve().parents[1]
    for pattern in pageinputs.CODE_FILES:
        assert list(package.glob(pattern)), pattern
