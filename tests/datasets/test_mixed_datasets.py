"""Several benchmarks in one run: [[datasets]] with labelled task ids, per-dataset judges and
per-dataset leaderboards (OSWorld and PPTC stand-ins from ../shared)."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import pytest

from pptarena.plugins.datasets.osworld.load import OsworldWarning
from pptarena.report.tables import summary_tables
from pptarena.run.configuration.config import ConfigError, load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.folder.records import ResultRow
from pptarena.run.runner import Runner
from tests.support import osworld_fixtures as fx
from tests.support import osworld_standin as standin
from tests.support import pptc_reference as ref
from tests.support.config import use, write_run_config

pytestmark = pytest.mark.skipif(
    not (standin.SHARED_OSWORLD.is_dir() and fx.CORPUS.is_dir() and ref.PPTC.is_dir()),
    reason="../shared/osworld, ../shared/corpus or ../shared/pptc is absent",
)
OSWORLD_IDS = ["04578141-*", "05dd4c1d-*", "21760ecb-*", "3b27600c-*"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    base = tmp_path_factory.mktemp("mixed")
    root, files = standin.build(base / "osworld")
    with contextlib.redirect_stdout(io.StringIO()):
        ref.prepare("short", 3, base / "pptc")
    return root, files, base / "pptc"


def _config(tmp_path, data, pptc_judges: tuple[str, ...] = ("match",), **parts) -> object:
    root, files, decks = data
    osworld = use(
        "osworld", label="osworld", root=str(root), files_dir=str(files), ids=OSWORLD_IDS, judges=["checkers"]
    )
    pptc = use(
        "pptc",
        label="pptc",
        root=str(ref.PPTC),
        decks_dir=str(decks),
        ids=["short-3-*"],
        judges=list(pptc_judges),
    )
    return write_run_config(
        tmp_path / "mixed.toml",
        run={"jobs": 2},
        datasets=[osworld, pptc],
        agents=["oracle", "noop"],
        judges=[use("osworld", label="checkers"), use("pptx_match", label="match")],
        **parts,
    )


@pytest.mark.slow
def test_mixed_run_has_labelled_ids_and_a_leaderboard_per_dataset(tmp_path, data):
    cfg = _config(tmp_path, data)
    config = load_config(cfg, get_registry())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OsworldWarning)
        summary = Runner(config, get_registry(), tmp_path / "run", quiet=True).run()
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    ids = {r["task_id"] for r in rows}
    assert {i.split("/")[0] for i in ids} == {"osworld", "pptc"}
    assert "osworld/04578141-1d42-4146-b9cf-6fab4ce5fd74" in ids and "pptc/short-3-0" in ids
    for r in rows:  # each dataset's tasks were scored by its own judge only
        if r["status"] == "scored":
            expected = "checkers" if r["task_id"].startswith("osworld/") else "match"
            assert set(r["scores"]) == {expected}, r
    by = {(r["agent"], r["task_id"]): r for r in rows}
    assert by[("oracle", "pptc/short-3-2")]["scores"]["match"]["score"] == 1.0
    assert (
        by[("oracle", "osworld/04578141-1d42-4146-b9cf-6fab4ce5fd74")]["scores"]["checkers"]["score"] == 1.0
    )
    groups = summary.agents["oracle"].groups["dataset"]
    assert set(groups) == {"osworld", "pptc"}
    assert groups["pptc"].judges["match"].mean_all == 1.0
    typed = [ResultRow.from_json(r) for r in rows]
    titles = [t.title for t in summary_tables(summary, typed)]
    assert "Leaderboard · osworld" in titles and "Leaderboard · pptc" in titles


def test_dataset_judges_must_name_configured_judges(tmp_path, data):
    cfg = _config(tmp_path, data, pptc_judges=("nope",))
    with pytest.raises(ConfigError, match="no \\[\\[judges\\]\\] table is labelled 'nope'"):
        load_config(cfg, get_registry())


def test_dataset_and_datasets_are_exclusive(tmp_path, data):
    cfg = _config(tmp_path, data, dataset="demo")
    with pytest.raises(ConfigError, match="either one \\[dataset\\] table or \\[\\[datasets\\]\\]"):
        load_config(cfg, get_registry())
