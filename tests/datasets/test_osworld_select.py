"""OSWorld, one task at a time (issue 26, point 4): tasks are selected first, then only their files
are checked; a missing files_dir names `arena dataset fetch`; data warnings print as one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.plugins.datasets.common import DatasetError
from pptarena.plugins.datasets.osworld.load import OsworldWarning, load_osworld
from pptarena.run.configuration.tasks import select_tasks
from pptarena.types import PptArenaError
from tests.support import osworld_fixtures as fx
from tests.support import osworld_standin as standin
from tests.support.config import use, write_run_config

pytestmark = pytest.mark.skipif(
    not (standin.SHARED_OSWORLD.is_dir() and fx.CORPUS.is_dir()),
    reason="../shared/osworld or ../shared/corpus is absent",
)
ONE = "550ce7e7-747b-495f-b122-acdc4d0b8e54"


@pytest.fixture(scope="module")
def partial(tmp_path_factory) -> tuple[Path, Path]:
    """The stand-in data with only task 550ce7e7's files in files_dir (the others not fetched)."""
    root, files = standin.build(tmp_path_factory.mktemp("osworld"))
    task = json.loads((root / "examples" / "libreoffice_impress" / f"{ONE}.json").read_text())
    names = {
        Path(f["path"]).name
        for s in task["config"]
        if s["type"] == "download"
        for f in s["parameters"]["files"]
    }
    expected = task["evaluator"]["expected"]
    names |= {e["dest"] for e in (expected if isinstance(expected, list) else [expected]) if "dest" in e}
    only = files.parent / "only-one"
    (only / ONE).mkdir(parents=True)
    for name in names:
        (only / ONE / name).write_bytes((files / name).read_bytes())
    return root, only


def config(tmp_path: Path, root: Path, files: Path) -> Path:
    return write_run_config(
        tmp_path / "osworld.toml",
        dataset=use("osworld", root=str(root), files_dir=str(files)),
        agents=["noop"],
        judges=["osworld"],
    )


def test_ids_select_a_task_whose_files_are_there_while_others_are_missing(partial, tmp_path):
    root, files = partial
    loaded = load_osworld(root, files, ids=["550ce7e7*"], blank_deck=tmp_path / "b.pptx")
    assert [t.id for t in loaded.tasks] == [ONE] and not loaded.tasks[0].metadata.get("missing_files")
    with pytest.raises(DatasetError, match=r"match no task id.*did you mean '550ce7e7"):
        load_osworld(root, files, ids=["550ce7e8*"], blank_deck=tmp_path / "b.pptx")


def test_only_the_selected_tasks_files_are_checked(partial, tmp_path):
    root, files = partial
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OsworldWarning)
        loaded = load_osworld(root, files, blank_deck=tmp_path / "b.pptx", check_files=False)
    assert len(loaded.tasks) == 46  # every listed task but the skipped compare_audios one
    assert select_tasks(loaded.tasks, [f"{ONE[:8]}*"], None)[0].id == ONE
    with pytest.raises(PptArenaError) as err:
        select_tasks(loaded.tasks, ["04578141*"], None)
    message = str(err.value)
    assert "missing for 1 selected task" in message and "45_2_Gold.pptx" in message
    assert "arena dataset fetch osworld" in message and ONE not in message


def test_run_and_tasks_with_one_task_selected(partial, tmp_path):
    root, files = partial
    cfg = config(tmp_path, root, files)
    listed = CliRunner().invoke(cli, ["tasks", "--config", str(cfg), "--task", "550ce7e7*"])
    assert listed.exit_code == 0, listed.output
    assert ONE in listed.output
    refused = CliRunner().invoke(
        cli, ["run", "--config", str(cfg), "--task", "04578141*", "--out", str(tmp_path / "r")]
    )
    assert refused.exit_code != 0 and "45_2.pptx" in refused.output


def test_a_missing_files_dir_names_the_fetch_command(partial, tmp_path):
    root, _ = partial
    gone = tmp_path / "not-fetched-yet"
    with pytest.raises(DatasetError, match=r"does not exist; `arena dataset fetch osworld --dir DIR`"):
        load_osworld(root, gone, blank_deck=tmp_path / "b.pptx")
    cfg = config(tmp_path, root, gone)
    res = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--task", ONE, "--out", str(tmp_path / "r")])
    assert (
        res.exit_code != 0 and "does not exist" in res.output and "arena dataset fetch osworld" in res.output
    )


@pytest.mark.slow
def test_data_warnings_print_as_one_line_each(partial, tmp_path):
    root, files = partial
    cfg = config(tmp_path, root, files)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    out = subprocess.run(
        [str(Path(sys.executable).parent / "arena"), "tasks", "--config", str(cfg), "--task", "af2d657a*"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr  # listed even though its files are not fetched: marked
    assert "file(s) missing" in out.stdout and "1 with files missing (arena dataset fetch)" in out.stderr
    lines = [x for x in out.stderr.splitlines() if "examine_aligment" in x]
    assert lines and all(x.startswith("warning: task af2d657a") for x in lines), out.stderr
    assert "OsworldWarning" not in out.stderr and "warnings.warn" not in out.stderr
