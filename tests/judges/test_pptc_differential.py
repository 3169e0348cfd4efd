"""``pptx_match`` against PPTC's own check, run unchanged from ../shared/pptc (differential).

Turn cases (tests/support/pptc_cases.py, built from a corpus deck): our ``(str_correct, pos_total,
pos_correct)`` must equal PPTC's ``calc_acc`` on every case, and where PPTC raises, our judge must
raise a judge error naming the same exception class. Sessions: the ``pptc`` dataset in session
mode (``session_check = "pptc"``), run by the runner with precomputed per-turn predictions, must give
each session the verdict PPTC's own ``evaluate.eval --sess`` gives it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pptarena.plugins.datasets.pptc import split_instruction
from pptarena.plugins.judges.pptc import PptxMatchJudge
from pptarena.plugins.judges.pptc.serialise import PptcUnreadable
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from pptarena.types import ComponentContext, JudgeError, Prediction, Task
from tests.support import pptc_cases
from tests.support import pptc_reference as ref
from tests.support.config import use, write_run_config

pytestmark = pytest.mark.skipif(
    not (ref.PPTC / "src" / "evaluate.py").is_file() or not pptc_cases.SOURCE.is_file(),
    reason=f"PPTC's snapshot {ref.PPTC} or the corpus deck {pptc_cases.SOURCE} is absent",
)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> list[pptc_cases.Case]:
    return pptc_cases.all_cases(tmp_path_factory.mktemp("pptc-cases"))


def _judge(tmp: Path, semantics: str = "pptc") -> PptxMatchJudge:
    options = PptxMatchJudge.Options(semantics=semantics)
    return PptxMatchJudge(options, ComponentContext(cache_dir=tmp, model=lambda r: None))


def _ours(judge: PptxMatchJudge, label: Path, pred: Path, instruction: str) -> tuple:
    """Our verdict in calc_acc's shape, or ("raises", the exception class PPTC raises there)."""
    _, restrictions = split_instruction(instruction)
    task = Task("t", instruction, label, target=label, metadata={"pptc": {"restrictions": restrictions}})
    try:
        v = judge.judge(task, Prediction(path=pred), None)
    except JudgeError as exc:
        cause = exc.__cause__
        return ("raises", cause.pptc_error if isinstance(cause, PptcUnreadable) else type(cause).__name__)
    return (int(v.score), v.metrics["pos_total"], v.metrics["pos_correct"])


@pytest.mark.slow  # 176 cases, each read by PPTC's code and ours: ~15 s on 2 idle cores
def test_every_turn_case_gets_pptcs_verdict(cases, tmp_path):
    judge = _judge(tmp_path)
    differ = []
    verdicts: Counter = Counter()
    for name, label, pred, instruction in cases:
        theirs = ref.calc_acc_or_raise(label, pred, instruction)
        verdicts[theirs] += 1
        if _ours(judge, label, pred, instruction) != theirs:
            differ.append(f"{name}: PPTC {theirs}, ours {_ours(judge, label, pred, instruction)}")
    assert not differ, f"{len(differ)} of {len(cases)} differ:\n" + "\n".join(differ)
    assert len(cases) >= 150
    # the cases exercise passes and failures of both checks, and each way PPTC raises
    assert {(1, 0, 0), (0, 0, 0), (1, 1, 1), (0, 1, 0), (0, 1, 1)} <= set(verdicts)
    assert {("raises", "TypeError"), ("raises", "ValueError"), ("raises", "AttributeError")} <= set(verdicts)


def test_quirks_give_pptcs_verdicts(cases, tmp_path):
    """The rows of issue 27 each on the side PPTC puts them (PPTC itself is asked in the test above)."""
    judge = _judge(tmp_path)
    by_name = {c[0]: c for c in cases}
    expected = {
        "nan-against-itself": (1, 0, 0),  # 'nan' == 'nan' as text
        "nan-against-resave": (1, 0, 0),
        "minus-zero-vs-zero": (0, 0, 0),  # '-0.0' != '0.0'
        "na-later-series-differ": (1, 0, 0),  # the text stops where python-pptx failed
        "na-first-series-differs": (0, 0, 0),  # ... and keeps what it read before
        "table-bar-moves-cells": (1, 0, 0),  # '|A|B|C|' either way
        "title-no-size-prediction": ("raises", "TypeError"),
        "date-no-size-prediction": ("raises", "TypeError"),
        "linked-picture-prediction": ("raises", "ValueError"),
    }
    for name, verdict in expected.items():
        _, label, pred, instruction = by_name[name]
        assert _ours(judge, label, pred, instruction) == verdict, name


def test_unreadable_decks_are_judge_errors_naming_the_part(cases, tmp_path):
    by_name = {c[0]: c for c in cases}
    judge = _judge(tmp_path)
    for name, words in [
        ("title-no-size-label", ["label deck", "'Title 3'", "set nowhere", "TypeError"]),
        ("linked-picture-prediction", ["prediction", "'Picture 5'", "linked picture", "ValueError"]),
    ]:
        _, label, pred, _ = by_name[name]
        task = Task("t", "x", label, target=label)
        with pytest.raises(JudgeError) as err:
            judge.judge(task, Prediction(path=pred), None)
        assert all(w in str(err.value) for w in words), str(err.value)


def test_corrected_semantics_mends_the_quirks(cases, tmp_path):
    """``semantics = "corrected"``: numbers compare as numbers, cells stay apart, unread parts unread."""
    judge = _judge(tmp_path, "corrected")
    by_name = {c[0]: c for c in cases}
    expected = {
        "nan-against-itself": 1,
        "minus-zero-vs-zero": 1,
        "table-bar-moves-cells": 0,
        "title-no-size-prediction": 1,  # only the missing size differs: it is not compared
        "linked-picture-label": 1,
        "placeholder-text": 0,  # everything else as before
        "identical": 1,
    }
    for name, score in expected.items():
        _, label, pred, instruction = by_name[name]
        assert _ours(judge, label, pred, instruction)[0] == score, name


def _sessions(base: Path, tmp: Path) -> dict[int, list[tuple[str, Path, Path]]]:
    """Sessions as (instruction, label, prediction) per turn, from the base deck."""
    tmp.mkdir()
    b = pptc_cases.Builder(tmp, base)
    title = lambda text: lambda p: setattr(pptc_cases._run(p), "text", text)  # noqa: E731
    la = b.deck("La", title("one"))
    lb = b.deck(
        "Lb",
        lambda p: setattr(pptc_cases._kind_shape(p, 2, "CHART").chart.chart_title.text_frame, "text", "two"),
        la,
    )
    lc = b.deck(
        "Lc", lambda p: setattr(pptc_cases._kind_shape(p, 2, "TEXT_BOX").text_frame, "text", "three"), lb
    )
    star_up = b.deck("Lb-star-up", lambda p: setattr(pptc_cases.named(p, 2, "Star"), "top", 0), lb)
    linked_a = b.deck("La-linked", pptc_cases._linked_picture, la)
    linked_b = b.deck("Lb-linked", pptc_cases._linked_picture, lb)
    star_bottom, box_left = " 2, star, slide, bottom", " 2, textbox, table, left"
    return {
        0: [(f"One.##{star_bottom}", la, base), ("Two.", lb, lb)],  # first turn wrong, final right
        1: [("One.", la, la), ("Two.", lb, base)],  # final wrong
        2: [(f"One.##{star_bottom}", la, la), ("Two.", lb, star_up)],  # turn 0's restriction broken later
        3: [("One.", la, la), (f"Two.##{box_left}", lb, lb), ("Three.", lc, lc)],
        4: [("One.", la, linked_a), ("Two.", lb, lb)],  # PPTC never reads the unreadable middle deck
        5: [("One.", la, la), ("Two.", lb, linked_b)],  # ... but raises on a final one
        6: [("One.## 2, star, slide, top", la, la), ("Two.", lb, lb)],  # the gold decks fail it
        7: [("One.## 2, star", la, la), ("Two.", lb, lb)],  # a malformed restriction: PPTC raises
    }


@pytest.mark.slow
def test_sessions_get_pptcs_session_verdict(cases, tmp_path):
    base = cases[0][1]
    sessions = _sessions(base, tmp_path / "decks")
    root = tmp_path / "pptc"
    folder = root / "PPT_test_input" / ref.SETS["short"]
    folder.mkdir(parents=True)
    for kind in ("PPT_Base_File", "PPT_Label_File"):
        (root / kind / ref.SETS["short"]).mkdir(parents=True)
    (root / "preds").mkdir()
    theirs = {}
    for k, turns in sessions.items():
        lines, reference = [], []
        for t, (instruction, label, pred) in enumerate(turns):
            rel = {
                kind: f"{kind}/{ref.SETS['short']}/{k}_{t}.pptx"
                for kind in ("PPT_Base_File", "PPT_Label_File")
            }
            shutil.copyfile(base if t == 0 else turns[t - 1][1], root / rel["PPT_Base_File"])
            shutil.copyfile(label, root / rel["PPT_Label_File"])
            shutil.copyfile(pred, root / "preds" / f"short-{k}--turn-{t}.pptx")
            lines.append(
                json.dumps(
                    {
                        "Turn": t,
                        "User instruction": instruction,
                        "Feasible API sequence": "",
                        "Base File": rel["PPT_Base_File"],
                        "Label File": rel["PPT_Label_File"],
                    }
                )
            )
            reference.append(
                {
                    "instruction": instruction,
                    "label": rel["PPT_Label_File"],
                    "pred": f"preds/short-{k}--turn-{t}.pptx",
                }
            )
        (folder / f"session_{k}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
        theirs[k] = ref.session_verdict(root, k, reference)
    cfg = write_run_config(
        tmp_path / "run.toml",
        run={"jobs": 1},
        dataset=use("pptc", root=str(root), mode="session"),
        # the predictions outside the dataset's folder: no jail shows a dataset folder (issue 31)
        agents=[use("precomputed", dir=str(shutil.copytree(root / "preds", tmp_path / "preds")))],
        judges=["pptx_match"],
    )
    out = tmp_path / "run"
    Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    ours = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        k = int(row["task_id"].split("-")[1])
        if row["status"] == "scored":
            ours[k] = int(row["scores"]["pptx_match"]["score"])
        else:
            found = re.search(r"raises (\w+)\)", row["error"] or "")
            ours[k] = ("raises", found.group(1) if found else row["status"])
    assert ours == theirs
    assert theirs == {
        0: 1,
        1: 0,
        2: 0,
        3: 1,
        4: 1,
        5: ("raises", "ValueError"),
        6: 0,
        7: ("raises", "ValueError"),
    }
