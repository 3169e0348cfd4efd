"""``arena dataset check`` (issue 33, item 3): one line per broken reference deck, a summary line,
exit 0 when clean and :data:`~pptarena.run.configuration.datacheck.DATASET_ERRORS_EXIT` when not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from pptx import Presentation

from pptarena.cli.dataset import NOTHING_SELECTED_EXIT
from pptarena.cli.main import cli
from pptarena.run.configuration.datacheck import DATASET_ERRORS_EXIT
from tests.support.config import run_toml, use, write_run_config


def make_deck(path: Path, title: str) -> Path:
    """A one-slide deck titled ``title``."""
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = title
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(path))
    return path


def folder_dataset(root: Path, names: list[str]) -> Path:
    """A ``folder`` dataset: one task per name, each with its own original and target deck."""
    for name in names:
        make_deck(root / name / "original.pptx", f"Old {name}")
        make_deck(root / name / "target.pptx", f"New {name}")
        (root / name / "task.toml").write_text(
            f'instruction = "Retitle {name}"\noriginal = "original.pptx"\ntarget = "target.pptx"\n',
            encoding="utf-8",
        )
    return root


def config(tmp_path: Path, judges=("structural",), renderer="libreoffice", **run) -> Path:
    """A config over tmp_path/data with the noop agent (its own cache folder under tmp_path)."""
    toml = run_toml(
        dataset=use("folder", root="data"),
        agents=["noop"],
        judges=list(judges),
        renderer=renderer,
        run={"cache_dir": str(tmp_path / "cache"), **run},
    )
    return write_run_config(tmp_path / "run.toml", toml)


def check(*args: str):
    return CliRunner().invoke(cli, ["dataset", "check", *args])


@pytest.fixture
def data(tmp_path) -> Path:
    return folder_dataset(tmp_path / "data", ["alpha", "beta", "gamma"])


def test_a_clean_dataset_exits_0(tmp_path, data):
    res = check("--config", str(config(tmp_path)))
    assert res.exit_code == 0, res.output
    assert res.stdout.strip().splitlines() == ["3 task(s), 6 file(s) opened: no problem found"]
    assert "no judge of this config renders" in res.stderr


def test_broken_decks_are_named_with_their_task_and_exit_6(tmp_path, data):
    (data / "beta" / "target.pptx").write_bytes(b"not a deck")
    original = data / "gamma" / "original.pptx"
    original.write_bytes(original.read_bytes()[:500])
    res = check("--config", str(config(tmp_path)))
    assert res.exit_code == DATASET_ERRORS_EXIT == 6, res.output
    lines = res.stdout.strip().splitlines()
    assert lines[0].startswith(
        f"beta: dataset error: target deck {data / 'beta' / 'target.pptx'} does not open: "
    )
    assert lines[1].startswith(f"gamma: dataset error: original deck {original} does not open: ")
    assert lines[2] == "3 task(s), 6 file(s) opened: 2 problem(s) in 2 task(s)"
    assert len(lines) == 3


def test_json_output_and_task_selection(tmp_path, data):
    (data / "beta" / "target.pptx").write_bytes(b"not a deck")
    cfg = str(config(tmp_path))
    res = check("--config", cfg, "--json", "--task", "b*")
    assert res.exit_code == DATASET_ERRORS_EXIT
    report = json.loads(res.stdout)
    assert report["tasks"] == 1 and report["bad_tasks"] == ["beta"] and report["ok"] is False
    assert report["problems"][0]["role"] == "target" and report["problems"][0]["stage"] == "open"
    res = check("--config", cfg, "--json", "--task", "a*", "--task", "g*")
    assert res.exit_code == 0 and json.loads(res.stdout)["tasks"] == 2
    res = check("--config", cfg, "--json", "--limit", "1")
    assert res.exit_code == 0 and json.loads(res.stdout)["tasks"] == 1


def test_a_selection_matching_no_task_is_an_error(tmp_path, data):
    res = check("--config", str(config(tmp_path)), "--task", "nothing-*")
    assert res.exit_code == NOTHING_SELECTED_EXIT == 3, res.output
    assert "nothing-*" in res.stderr and "no task" in res.stderr


def test_a_dataset_that_does_not_load_is_a_dataset_error(tmp_path, data):
    (data / "alpha" / "target.pptx").unlink()
    res = check("--config", str(config(tmp_path)))
    assert res.exit_code == DATASET_ERRORS_EXIT
    assert "dataset error: the dataset does not load" in res.stderr and "alpha" in res.stderr


def test_a_rendering_config_renders_and_no_render_does_not(tmp_path, data, fake_plugins):
    """The ``rubric`` judge renders originals, so the check renders them through the run's renderer:
    the fake plugins' ``dummy`` renderer fails on every deck, which is the tool's fault (one error,
    not three dataset problems); ``--no-render`` only opens the decks."""
    cfg = str(config(tmp_path, judges=("rubric",), renderer="dummy"))
    res = check("--config", cfg)
    assert res.exit_code == 1, res.output
    assert "rendering the original decks" in res.stderr
    assert "the renderer failed on every one of the 3 decks that open" in res.stderr
    assert "dummy renderer cannot render" in res.stderr and "--no-render" in res.stderr
    assert "dataset error" not in res.output
    res = check("--config", cfg, "--no-render")
    assert res.exit_code == 0, res.output
    assert "6 file(s) opened: no problem found" in res.stdout


def test_a_long_check_reports_progress_when_piped(tmp_path):
    folder_dataset(tmp_path / "data", [f"t{i:02d}" for i in range(14)])  # 28 decks: over 25 steps
    res = check("--config", str(config(tmp_path)))
    assert res.exit_code == 0, res.output
    assert "checked 25/28 step(s)" in res.stderr and "checked 28/28 step(s)" in res.stderr
    assert "\x1b[" not in res.stderr


@pytest.mark.slow
def test_real_renders_land_in_the_render_cache_a_run_reuses(tmp_path):
    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed")
    folder_dataset(tmp_path / "data", ["only"])
    cfg = str(config(tmp_path, judges=("rubric",)))
    res = check("--config", cfg)
    assert res.exit_code == 0, res.output
    assert "2 file(s) opened, 1 rendered: no problem found" in res.stdout  # rubric renders originals
    entries = [p for p in (tmp_path / "cache" / "renders").glob("*/*") if (p / "meta.json").is_file()]
    assert [json.loads((e / "meta.json").read_text())["info"]["deck"] for e in entries] == ["original.pptx"]
