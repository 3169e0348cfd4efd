"""Commands that write into or beside a run folder, on a read-only one: one line naming the folder and
the option to use instead, a non-zero exit, no traceback (issue 33, item 5).

Why bubblewrap: these tests run as root, and root writes into a folder whatever its mode bits, so
``chmod a-w`` would test nothing. A read-only bind mount stops root as it stops anyone (every write
fails with ``EROFS``, whichever function makes it: ``mkdir``, ``open``, ``os.replace``, SQLite), so
each command runs as a real process under ``bwrap --bind / / --ro-bind RUN RUN``. Without a bwrap
that can do this the tests are skipped; :func:`test_writing_into_names_the_folder_and_the_option`
checks the translation of the error itself everywhere.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pptarena.report.fileio import ReadOnlyFolderError, writing_into
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.runner import Runner
from tests.support.config import fake_dataset, use, write_run_config

ARENA = [sys.executable, "-m", "pptarena.cli"]


def test_writing_into_names_the_folder_and_the_option(tmp_path):
    with pytest.raises(ReadOnlyFolderError) as got, writing_into(tmp_path, "use --out FILE"):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "x"))
    assert str(got.value) == f"cannot write into {tmp_path} (Read-only file system): use --out FILE"
    with pytest.raises(FileNotFoundError), writing_into(tmp_path, "use --out FILE"):  # not a read-only error
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")


def _bwrap_can_make_read_only(folder: Path) -> bool:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    probe = subprocess.run(
        [bwrap, "--bind", "/", "/", "--ro-bind", str(folder), str(folder), "--dev", "/dev", "--proc", "/proc",
         "touch", str(folder / "probe")],
        capture_output=True, check=False,
    )  # fmt: skip
    return probe.returncode != 0 and b"Read-only" in probe.stderr


@pytest.fixture
def run_dir(tmp_path, monkeypatch, plugin_modules) -> Path:
    """A finished run of fakeplugins' retitle and noop agents, judged by the title judge and a
    dual-shaped one (``ifvq``, so ``arena export pptarena-csv`` has scores to write)."""
    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins,pptarena_figures_plugins")
    reset_registry()
    monkeypatch.chdir(tmp_path)
    cfg = write_run_config(
        tmp_path / "run.toml",
        dataset=fake_dataset(2),
        renderer="dummy",
        agents=["retitle", "noop"],
        judges=["title", use("ifvq", label="dual", scores={"task-00": [4, 3], "task-01": [2, 5]})],
    )
    out = tmp_path / "run"
    Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    (tmp_path / "labels.csv").write_text("task_id,agent,label\ntask-00,retitle,1\ntask-00,noop,0\n")
    if not _bwrap_can_make_read_only(out):
        pytest.skip("bubblewrap cannot bind a folder read-only here")
    yield out
    reset_registry()


def _read_only(run: Path, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    """``arena ARGS`` (or ``python -c CODE``) with ``run`` bound read-only, in the run's parent folder."""
    cmd = [sys.executable, "-c", code] if code else [*ARENA, *args]
    jail = ["bwrap", "--bind", "/", "/", "--ro-bind", str(run), str(run), "--dev", "/dev", "--proc", "/proc"]
    return subprocess.run(
        [*jail, *cmd], cwd=run.parent, capture_output=True, text=True, timeout=120, check=False
    )


def _refused(res: subprocess.CompletedProcess, folder: Path, option: str) -> None:
    """One line on stderr naming ``folder`` and ``option``; a non-zero exit; no traceback."""
    assert res.returncode != 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"cannot write into {folder} (Read-only file system)" in lines[0] and option in lines[0], lines[0]


@pytest.mark.slow
def test_report_rescore_and_meta_eval_name_the_folder_and_the_option(run_dir):
    _refused(_read_only(run_dir, "report", "run"), run_dir, "--out FILE.html")
    ok = _read_only(run_dir, "report", "run", "--out", "elsewhere/report.html")
    assert ok.returncode == 0, ok.stderr
    assert (run_dir.parent / "elsewhere" / "report.html").is_file()

    _refused(_read_only(run_dir, "rescore", "run", "--quiet"), run_dir / "rescore", "copy the run folder")

    labels_only = _read_only(run_dir, "meta-eval", "--run", "run", "--labels", "labels.csv")
    _refused(labels_only, run_dir / "meta-eval", "--out FILE.json")
    ok = _read_only(run_dir, "meta-eval", "--run", "run", "--labels", "labels.csv", "--out", "m.json")
    assert ok.returncode == 0, ok.stderr
    assert (run_dir.parent / "m.json").is_file()
    repeat = _read_only(run_dir, "meta-eval", "--run", "run", "--repeat", "2")
    _refused(repeat, run_dir / "meta-eval", "copy the run folder")


@pytest.mark.slow
def test_export_and_label_new_name_the_folder_and_the_option(run_dir):
    _refused(_read_only(run_dir, "export", "pptarena-csv", "run"), run_dir / "export", "--out DIR")
    ok = _read_only(run_dir, "export", "pptarena-csv", "run", "--out", "csv")
    assert ok.returncode == 0, ok.stderr
    assert (run_dir.parent / "csv" / "retitle_judge_results.csv").is_file()

    label = _read_only(run_dir, "label", "new", "--run", "run", "--annotators", "a,b")
    _refused(label, run_dir / "campaigns", "--out FILE.sqlite")
    ok = _read_only(run_dir, "label", "new", "--run", "run", "--annotators", "a,b", "--out", "c.sqlite")
    assert ok.returncode == 0, ok.stderr
    assert (run_dir.parent / "c.sqlite").is_file()


VIEW = """
from pathlib import Path
from starlette.testclient import TestClient
from pptarena.label.store import CampaignError
from pptarena.view.app import ViewState, create_app
state = ViewState([Path("run")], render=True)
for w in state.warnings:
    print("warning:", w)
client = TestClient(create_app(state), base_url="http://127.0.0.1:8000")
(rid,) = state.runs
print("pages", client.get("/").status_code, client.get(f"/r/{rid}").status_code,
      client.get(f"/r/{rid}/pair", params={"task": "task-00", "agent": "retitle"}).status_code)
try:
    ViewState([Path("run")], campaigns=[Path("run/campaigns/c.sqlite")])
except CampaignError as exc:
    print("refused:", exc)
"""


@pytest.mark.slow
def test_view_serves_a_read_only_run_and_names_what_it_cannot_serve(run_dir):
    pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
    made = subprocess.run([*ARENA, "label", "new", "--run", "run", "--annotators", "a", "--name", "c"],
                          cwd=run_dir.parent, capture_output=True, text=True, check=False)  # fmt: skip
    assert made.returncode == 0, made.stderr
    res = _read_only(run_dir, code=VIEW)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    out = res.stdout
    assert "pages 200 200 200" in out
    assert f"warning: {run_dir} is read-only: slides it has no render of are not rendered" in out
    campaigns = run_dir / "campaigns"
    assert f"warning: campaign {campaigns / 'c.sqlite'} is not served: cannot write into {campaigns}" in out
    assert f"refused: cannot write into {campaigns} (read-only)" in out and "--campaign FILE" in out
