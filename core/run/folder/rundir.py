"""Where every file of a run lives: the one description of the run folder's layout.

::

    <run>/manifest.json        config (secrets elided), plugins, start and end
    <run>/results.jsonl        one line per finished (agent, task, epoch), appended as each finishes
    <run>/summary.json         aggregates, rewritten at the end
    <run>/report.html          the HTML report
    <run>/tasks/<agent>/<task>/  input/, prediction.pptx, agent.log.jsonl, verdicts.json, renders/,
                                 judges/, references/ ...
    <run>/tasks/<agent>/<task>@e<N>/  the same for attempt N > 1 (``[run] epochs``)
    <run>/rescore/<name>/      a re-scoring: the same layout (without predictions)
    <run>/meta-eval/           meta_eval.json and the verdicts of repeated judgings (repeat-<k>/)

The runner, the results store, the report and re-scoring all take their paths from
:class:`RunDir` and the names below; nothing else spells them. ``renders`` and ``judges`` are
defined by the judges' contract (:data:`pptarena.evidence.RENDERS`, :data:`~pptarena.evidence.JUDGES`)
and re-exported here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from pptarena.evidence import JUDGES as JUDGES  # re-exported: defined by the judges' contract
from pptarena.evidence import RENDERS as RENDERS

RESULTS = "results.jsonl"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
REPORT = "report.html"
REPORT_PAGES = "report"  # one page per task beside report.html, for large runs (report/pages.py)
TASKS = "tasks"
RESCORE = "rescore"
META_EVAL = "meta-eval"
VERDICTS = "verdicts.json"
AGENT_LOG = "agent.log.jsonl"
AGENT_STDERR = "agent.stderr.txt"
AGENT_ERROR = "agent.error.txt"
INPUT = "input"
LOCK = ".lock"  # held by the run working in the folder (run/folder/runlock.py)
BATCHES = "batches.jsonl"  # batch jobs submitted and their results (run/batches.py): resume polls them
ATTEMPTS = ".attempts.jsonl"  # pair attempts started and ended, to spot pairs that kill the run
# RENDERS ("renders": an attempt's slide renders, one folder per role) and JUDGES ("judges": its judge
# evidence, one folder per judge label) are defined by the judges' contract (pptarena.evidence, which
# imports nothing from the run stage) and listed here with the rest of the layout.
REFERENCES = "references"  # an attempt's reference decks re-saved by the agent's tool (run/references.py)
EXECUTOR_RECORD = "executor.json"  # where a remote executor ran an attempt (the ray executor writes it)
WORKER_SPEC = ".worker-spec.json"  # the per-attempt worker's instructions, in the attempt's folder
WORKER_RESULT = ".worker-result.json"  # what came of the agent, written by the per-attempt worker
PREDICTION = "prediction"  # the handed-in deck's name, with the original's suffix (prediction_name)


def prediction_name(suffix: str) -> str:
    """The file name of an attempt's prediction: ``prediction`` with the original deck's suffix
    (``.pptx`` when it has none), so a ``.pptm`` original gives ``prediction.pptm``."""
    return f"{PREDICTION}{suffix or '.pptx'}"


def safe_name(text: str) -> str:
    """A file-system-safe folder name (at most 120 characters) for a task id or label.

    Names that had to be changed or shortened end in a hash of the original, so
    two different ids never share a folder.
    """
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "task"
    if cleaned != text or len(cleaned) > 120:
        cleaned = cleaned[:113] + "-" + hashlib.sha1(text.encode()).hexdigest()[:6]
    return cleaned


@dataclass(frozen=True)
class RunDir:
    """The paths of one run folder (or of one re-scoring inside it)."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def results(self) -> Path:
        """The append-only results file."""
        return self.root / RESULTS

    @property
    def manifest(self) -> Path:
        """The run's manifest."""
        return self.root / MANIFEST

    @property
    def summary(self) -> Path:
        """The aggregate summary written at the end of a run."""
        return self.root / SUMMARY

    @property
    def report(self) -> Path:
        """The HTML report."""
        return self.root / REPORT

    @property
    def tasks(self) -> Path:
        """The folder holding one sub-folder per agent."""
        return self.root / TASKS

    def pair(self, agent: str, task_id: str) -> Path:
        """``tasks/<agent>/<task>``: the folder of one (agent, task) pair."""
        return self.tasks / safe_name(agent) / safe_name(task_id)

    def attempt(self, agent: str, task_id: str, epoch: int = 1) -> Path:
        """The folder of one attempt: the pair's folder for epoch 1, ``tasks/<agent>/<task>@e<N>`` after.

        ``@`` never occurs in a :func:`safe_name`, so no task id can collide with an epoch folder.
        """
        pair = self.pair(agent, task_id)
        return pair if epoch <= 1 else pair.with_name(f"{pair.name}@e{epoch}")

    def verdicts(self, agent: str, task_id: str) -> Path:
        """The judges' verdicts of one pair."""
        return self.pair(agent, task_id) / VERDICTS

    @property
    def rescores(self) -> Path:
        """The folder holding one sub-folder per re-scoring."""
        return self.root / RESCORE

    def rescore(self, name: str) -> RunDir:
        """The run folder of the re-scoring called ``name``."""
        return RunDir(self.rescores / name)

    @property
    def meta_eval(self) -> Path:
        """Where ``arena meta-eval`` writes ``meta_eval.json`` and its repeated judgings."""
        return self.root / META_EVAL

    def meta_eval_repeat(self, repeat: int) -> RunDir:
        """The folder where ``arena meta-eval --repeat`` keeps the verdicts of its ``repeat``-th judging."""
        return RunDir(self.meta_eval / f"repeat-{repeat}")

    def is_run(self) -> bool:
        """Whether the folder holds a run (it has a results file)."""
        return self.results.is_file()
