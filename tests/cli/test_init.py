"""`arena init`: the example configs ship in the package; the README's first commands work from a wheel."""

from __future__ import annotations

import zipfile

import pytest
from click.testing import CliRunner

from pptarena import examples
from pptarena.cli.main import cli
from tests.support.paths import ROOT
from tests.support.wheel_env import build_log, clean_env, fresh_venv, run, wheel_path


def test_every_example_in_the_folder_is_package_data():
    assert set(examples.names()) == {p.stem for p in (ROOT / "examples").glob("*.toml")}
    assert examples.read("demo") == (ROOT / "examples" / "demo.toml").read_text(encoding="utf-8")


def test_init_writes_the_demo_and_points_its_header_at_the_new_file(tmp_path):
    result = CliRunner().invoke(cli, ["init", "demo", str(tmp_path / "here")])
    assert result.exit_code == 0, result.output
    written = (tmp_path / "here" / "demo.toml").read_text()
    assert "examples/demo.toml" not in written and f"--config {tmp_path / 'here' / 'demo.toml'}" in written
    assert "still needs" not in result.output  # the demo runs as written
    again = CliRunner().invoke(cli, ["init", "demo", str(tmp_path / "here")])
    assert again.exit_code != 0 and "already exists" in again.output


def test_init_names_what_an_example_still_needs(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # ~/data/PPTArena cannot exist
    result = CliRunner().invoke(cli, ["init", "pptpilot-openai", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "root = '~/data/PPTArena'" in result.output and "OPENAI_API_KEY" in result.output


def test_init_suggests_a_close_name_and_lists():
    result = CliRunner().invoke(cli, ["init", "demi"])
    assert result.exit_code != 0 and "did you mean 'demo'" in result.output
    listed = CliRunner().invoke(cli, ["init", "--list"])
    assert listed.output.splitlines()[0].startswith("demo ") and "osworld-impress" in listed.output


def test_a_missing_config_suggests_init(tmp_path):
    result = CliRunner().invoke(cli, ["run", "--config", str(tmp_path / "demo.toml")])
    assert result.exit_code != 0 and "arena init" in result.output
    (tmp_path / "demo.toml").write_text(examples.read("demo"))
    typo = CliRunner().invoke(cli, ["run", "--config", str(tmp_path / "dmeo.toml")])
    assert typo.exit_code != 0 and f"did you mean '{tmp_path / 'demo.toml'}'" in typo.output


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_runs_the_demo_from_an_empty_folder(tmp_path_factory):
    """The user's steps: pip install the wheel, then `arena init demo && arena run --config demo.toml`."""
    venv = fresh_venv(tmp_path_factory.getbasetemp() / "wheel-env")
    log = build_log()
    assert "is absent from the `packages` configuration" not in log, log[-2000:]
    assert "License classifiers are deprecated" not in log and "project.license` as a TOML table" not in log
    names = zipfile.ZipFile(wheel_path()).namelist()
    for member in ("pptarena/examples/demo.toml", "pptarena/schemas/deck-summary.schema.json"):
        assert member in names
    empty = tmp_path_factory.mktemp("empty")
    env = clean_env(PPTARENA_CACHE=str(empty.parent / "wheel-cache"))
    arena = str(venv / "bin" / "arena")
    init = run([arena, "init", "demo"], cwd=empty, env=env)
    assert init.returncode == 0, init.stderr
    done = run([arena, "run", "--config", "demo.toml", "--quiet"], cwd=empty, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (empty / "runs").iterdir()
    assert (run_dir / "report.html").is_file()
    rows = (run_dir / "results.jsonl").read_text().splitlines()
    assert len(rows) == 24  # 12 tasks x noop, oracle
    # the installed package is the wheel's, not this repository's sources
    where = run([str(venv / "bin" / "python"), "-c", "import pptarena; print(pptarena.__file__)"], env=env)
    assert str(venv) in where.stdout


def test_the_readme_shows_the_demo_config_as_it_ships():
    readme = (ROOT / "README.md").read_text()
    marker = "The demo config it writes is `examples/demo.toml`:\n\n```toml\n"
    start = readme.index(marker) + len(marker)
    body = examples.read("demo")
    assert body[body.index("[run]") :] == readme[start : readme.index("```", start)]
