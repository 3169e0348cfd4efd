"""The osworld dataset and judge on a stand-in of OSWorld's Impress data (real task files from
../shared/osworld, decks from ../shared/corpus), through the real runner with oracle and noop."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pptarena.plugins.datasets.common import DatasetError
from pptarena.plugins.datasets.osworld.load import OsworldWarning, load_osworld
from pptarena.plugins.judges.osworld.judge import OsworldJudge
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from pptarena.types import ComponentContext, JudgeError, Prediction, Task
from tests.support import osworld_fixtures as fx
from tests.support import osworld_standin as standin
from tests.support.config import use, write_run_config

pytestmark = pytest.mark.skipif(
    not (standin.SHARED_OSWORLD.is_dir() and fx.CORPUS.is_dir()),
    reason="../shared/osworld or ../shared/corpus is absent",
)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, Path]:
    return standin.build(tmp_path_factory.mktemp("osworld"))


def _load(data, tmp_path, **kw):
    root, files = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_osworld(root, files, blank_deck=tmp_path / "blank.pptx", **kw)
    return loaded, [str(w.message) for w in caught if issubclass(w.category, OsworldWarning)]


def test_loads_every_listed_task_and_says_what_it_skips(data, tmp_path):
    loaded, messages = _load(data, tmp_path)
    index = json.loads((standin.SHARED_OSWORLD / "test_all_impress.json").read_text())["libreoffice_impress"]
    assert len(index) == 47
    assert len(loaded.tasks) + len(loaded.skipped) == 47
    assert set(loaded.skipped) == {"c59742c0-4323-4b9d-8a02-723c251deaa0"}  # compare_audios
    by_id = {t.id: t for t in loaded.tasks}
    assert "f0a334af-f91b-4c03-b578-aac9bec2b543" not in by_id  # not in test_all.json
    assert by_id["0f84bef9-9790-432e-92b7-eece357603fb"].metadata["requires"] == ["libreoffice_settings"]
    assert by_id["ef9d12bd-bcee-4ba0-a40e-918400f43ddf"].metadata["requires"] == ["accessibility_tree"]
    assert by_id["455d3c66-7dc6-4537-a39a-36d3e9119df7"].metadata["requires"] == ["exported_files"]
    # the gold deck is the target; the original-deck references of position probes are not
    assert by_id["04578141-1d42-4146-b9cf-6fab4ce5fd74"].target.name == "45_2_Gold.pptx"
    assert by_id["15aece23-a215-4579-91b4-69eec72e18da"].target is None
    # the misspelled option: a warning saying what OSWorld does, and the key dropped
    typo = [m for m in messages if "examine_aligment" in m]
    assert typo and "never reads it" in typo[0] and "alignment is still examined" in typo[0], typo
    spec = by_id["af2d657a-e6b3-4c6a-9f67-9e3ed015974c"].metadata["osworld"]["evaluator"]
    assert spec["options"] == [{}]
    assert any("ed43c15f" in m and "scores 0" in m for m in messages)


def test_strict_options_refuse_the_misspelling(data, tmp_path):
    with pytest.raises(DatasetError, match="examine_aligment"):
        _load(data, tmp_path, strict_options=True)


def test_missing_files_are_named_all_at_once(data, tmp_path):
    root, files = data
    partial = tmp_path / "partial"
    partial.mkdir()
    keep = sorted(files.iterdir())[5:]
    for f in keep:
        (partial / f.name).symlink_to(f)
    with pytest.raises(DatasetError) as err:
        load_osworld(root, partial, blank_deck=tmp_path / "blank.pptx")
    message = str(err.value)
    gone = sorted(files.iterdir())[:5]
    assert f"{len(gone)} file(s) missing" in message
    for f in gone:
        assert f.name in message
    assert "xlangai/ubuntu_osworld_file_cache" in message and "https://" in message


def test_unknown_checker_option_is_a_judge_error(tmp_path):
    deck = tmp_path / "d.pptx"
    fx.save_pair(fx.Case("x", "docling_powerpoint_comments.pptx"), tmp_path)
    deck = tmp_path / "result.pptx"
    spec = {
        "func": "compare_pptx_files",
        "result": {"type": "vm_file", "path": "/x/d.pptx"},
        "expected": {"type": "cloud_file", "path": "https://x/e.pptx", "dest": "e.pptx"},
        "options": {"examine_colour": False},
    }
    task = Task("t", "i", deck, metadata={"osworld": {"evaluator": spec, "files": {"e.pptx": str(deck)}}})
    judge = OsworldJudge(OsworldJudge.Options(), ComponentContext(cache_dir=tmp_path, model=lambda r: None))
    with pytest.raises(JudgeError, match="examine_colour"):
        judge.judge(task, Prediction(path=deck), None)


def test_rule_checkers_and_combination(tmp_path):
    """A deck with the asked-for transition passes, the unchanged deck fails; `or`/`and` combine."""
    result, _ = fx.save_pair(fx.Case("x", "docling_powerpoint_comments.pptx"), tmp_path)
    good = tmp_path / "good.pptx"
    good.write_bytes(result.read_bytes())
    fx.set_slide_xml(good, "ppt/slides/slide1.xml", fx.add_transition("dissolve"))
    deck = {"type": "vm_file", "path": "/home/user/Desktop/deck.pptx"}
    rule = {"type": "rule", "rules": {"slide_idx": 0, "transition_type": "dissolve"}}
    portrait = "check_slide_orientation_Portrait"
    judge = OsworldJudge(OsworldJudge.Options(), ComponentContext(cache_dir=tmp_path, model=lambda r: None))

    def score(spec, path):
        task = Task("t", "i", result, metadata={"osworld": {"evaluator": spec, "files": {}}})
        return judge.judge(task, Prediction(path=path), None)

    single = {"func": "check_transition", "result": deck, "expected": rule}
    assert score(single, good).score == 1.0
    verdict = score(single, result)
    assert verdict.score == 0.0 and "has no transition" in verdict.explanation
    both = {
        "func": ["check_transition", portrait],
        "conj": "and",
        "result": [deck, deck],
        "expected": [rule, None],
    }
    assert score(both, good).score == 0.0  # landscape deck
    either = {**both, "conj": "or"}
    assert score(either, good).score == 1.0
    fill = {
        "func": "evaluate_presentation_fill_to_rgb_distance",
        "result": deck,
        "expected": {"type": "rule", "rules": {"rgb": [0, 0, 255]}},
    }
    bluish, _ = fx.save_pair(
        fx.Case("b", "docling_powerpoint_comments.pptx", fx.background("3030C0", every=True)),
        tmp_path / "bluish",
    )
    frac = score(fill, bluish).score
    assert frac == pytest.approx(1 - (48**2 + 48**2 + 63**2) ** 0.5 / (3 * 255**2) ** 0.5)  # fractional
    assert score(fill, result).score == 0.0  # no solid background at all


def _run(data, tmp_path, agents: list[str]) -> tuple[dict, list[dict], dict]:
    root, files = data
    cfg = write_run_config(
        tmp_path / "osworld.toml",
        run={"jobs": 2},
        dataset=use("osworld", root=str(root), files_dir=str(files)),
        agents=agents,
        judges=["osworld"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OsworldWarning)
        Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "run", jobs=2, quiet=True).run()
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    return {(r["agent"], r["task_id"]): r for r in rows}, rows, manifest


def skipped_reasons(manifest: dict) -> dict:
    return {(s["agent"], s["task_id"]): s["reason"] for s in manifest["skipped"]}


@pytest.mark.slow
def test_oracle_scores_one_and_noop_zero_through_the_runner(data, tmp_path):
    by_pair, rows, manifest = _run(data, tmp_path, ["oracle", "noop"])
    skipped = {(s["agent"], s["task_id"]) for s in manifest["skipped"]}
    live = {
        "0f84bef9-9790-432e-92b7-eece357603fb",
        "2cd43775-7085-45d8-89fa-9e35c0a915cf",
        "ef9d12bd-bcee-4ba0-a40e-918400f43ddf",
        "455d3c66-7dc6-4537-a39a-36d3e9119df7",
    }
    reasons = skipped_reasons(manifest)
    assert {t for a, t in skipped if a == "noop"} == live
    assert all("does not provide" in reasons[("noop", t)] for t in live)
    # tasks without a gold deck (checker-only, the four live ones among them): the oracle is skipped
    # with the reason, never counted as an agent_error
    no_target = {t for a, t in skipped if a == "oracle"}
    assert live <= no_target and len(no_target) == 13
    assert all("no target deck" in reasons[("oracle", t)] for t in no_target)
    assert not [r for r in rows if r["status"] == "agent_error"]
    no_gold = no_target - live
    assert manifest["finished_at"] is not None
    gold = [r for (a, _), r in by_pair.items() if a == "oracle" and r["status"] == "scored"]
    assert len(gold) >= 30
    assert all(r["scores"]["osworld"]["score"] == 1.0 for r in gold)
    noop = [by_pair[("noop", r["task_id"])] for r in gold]
    # every gold task asks for a change except a097acff (save a copy as pre.pptx)
    changed = [r for r in noop if not r["task_id"].startswith("a097acff")]
    assert all(r["scores"]["osworld"]["score"] == 0.0 for r in changed)
    assert by_pair[("noop", "a097acff-6266-4291-9fbd-137af7ecd439")]["scores"]["osworld"]["score"] == 1.0
    # tasks without a gold deck: the unedited deck fails the checker
    for task_id in no_gold:
        row = by_pair[("noop", task_id)]
        assert row["status"] == "scored" and row["scores"]["osworld"]["score"] == 0.0, row
