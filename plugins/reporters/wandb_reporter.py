"""The ``wandb`` reporter: logs a finished run to Weights & Biases.

By default it runs W&B in **offline** mode: nothing leaves the machine; the W&B run is written to
``<run>/wandb/offline-run-*`` (or under ``dir``) and can be uploaded later with
``wandb sync <that folder>``. ``mode = "online"`` logs straight to the W&B server (the key comes
from ``WANDB_API_KEY`` or ``wandb login``, as W&B itself reads it). One W&B run per arena run, named
after the run folder:

* config: the run's config (secrets elided);
* history: with ``pair_metrics``, each pair's score as ``score/<agent>/<judge>`` at step = the
  pair's index (task, epoch order), and at the last step the table ``pairs`` (a ``wandb.Table``: one
  row per agent, task and epoch with status, every judge's score, duration, cost, error);
* summary: the run summary's figures (``<agent>/<judge>/mean``, ``.../success_rate``, status
  counts, cost);
* artifact ``<run name>`` of type ``pptarena-run``: ``results.jsonl``, ``summary.json``,
  ``manifest.json`` and ``report.html``.

The run is made with W&B's console capture, code saving, git and system statistics off, so it
prints nothing into arena's output and (offline) opens no connection. ``wandb`` is imported only when
the reporter is built: ``pip install 'pptarena[wandb]'``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

import pptarena
from pptarena import ComponentUnavailable

INSTALL_HINT = "wandb is not available (install pptarena[wandb])"


class WandbReporterOptions(pptarena.Options):
    """The ``[[reporters]]`` table of ``use = "wandb"``."""

    project: str = Field("pptarena", min_length=1, description="W&B project the run goes into")
    entity: str | None = Field(None, description="W&B entity (user or team); default: W&B's own default")
    mode: Literal["offline", "online", "disabled"] = Field(
        "offline",
        description="offline: write the W&B run to disk only (upload later with `wandb sync`); "
        "online: log to the W&B server; disabled: log nothing",
    )
    dir: Path | None = Field(
        None, description="folder the W&B run folder is written under (default: the run folder)"
    )
    name: str | None = Field(None, description="name of the W&B run (default: the run folder's name)")
    group: str | None = Field(None, description="W&B run group")
    tags: list[str] = Field(default_factory=list, description="W&B run tags")
    pair_metrics: bool = Field(
        True, description="log each pair's score as score/<agent>/<judge> at step = the pair's index"
    )
    artifacts: bool = Field(
        True, description="log results.jsonl, summary.json, manifest.json and report.html as an artifact"
    )


def artifact_name(text: str) -> str:
    """``text`` as a W&B artifact name (letters, digits, ``-``, ``_`` and ``.``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "run"


@contextmanager
def _quiet_service(offline: bool) -> Iterator[None]:
    """In offline mode, start W&B's service without its error reporting (``WANDB_ERROR_REPORTING``),
    unless the user set that variable; it is put back afterwards."""
    if not offline or os.environ.get("WANDB_ERROR_REPORTING") is not None:
        yield
        return
    os.environ["WANDB_ERROR_REPORTING"] = "false"
    try:
        yield
    finally:
        os.environ.pop("WANDB_ERROR_REPORTING", None)


class WandbReporter:
    """Logs a finished run to Weights & Biases (see the module docstring for what goes where)."""

    Options = WandbReporterOptions

    def __init__(self, options: WandbReporterOptions, context: pptarena.ComponentContext):
        try:
            import wandb
        except ImportError as exc:
            raise ComponentUnavailable(INSTALL_HINT) from exc
        self.options = options
        self.context = context
        self._wandb = wandb

    def report(self, run: Any) -> str | None:
        """Log ``run`` (a :class:`pptarena.run.FinishedRun`); the line saying where."""
        wandb, opts = self._wandb, self.options
        if opts.mode == "disabled":
            return None
        root = Path(opts.dir) if opts.dir is not None else Path(run.run_dir)
        root.mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(
            mode=opts.mode,
            silent=True,
            console="off",
            save_code=False,
            disable_git=True,
            disable_job_creation=True,
            x_disable_stats=True,
            x_disable_meta=True,
            x_disable_machine_info=True,
            x_save_requirements=False,
        )
        name = opts.name or run.name
        with _quiet_service(opts.mode == "offline"):
            wb = wandb.init(
                project=opts.project,
                entity=opts.entity,
                dir=str(root),
                name=name,
                group=opts.group,
                tags=list(opts.tags) or None,
                job_type="evaluation",
                config=run.config,
                settings=settings,
                reinit="create_new",
            )
            try:
                self._log(wb, run, name)
            except BaseException:
                wb.finish(exit_code=1)
                raise
            wb.finish()
        folder = Path(wb.dir).parent  # <dir>/wandb/offline-run-*/files -> the run's folder
        if opts.mode == "offline":
            return f"W&B: logged {run.name} offline to {folder} (upload later: wandb sync {folder})"
        return f"W&B: logged {run.name} as {getattr(wb, 'url', None) or wb.id}"

    def _log(self, wb: Any, run: Any, name: str) -> None:
        wandb = self._wandb
        columns, rows = run.pair_table()
        table = wandb.Table(columns=columns, data=rows, allow_mixed_types=True)
        steps: dict[int, dict[str, Any]] = {}
        if self.options.pair_metrics:
            for agent, judge, step, score in run.pair_scores():
                steps.setdefault(step, {})[f"score/{agent}/{judge}"] = score
        last = max(steps, default=0)
        steps.setdefault(last, {})["pairs"] = table
        for step in sorted(steps):  # W&B drops a step lower than one logged before
            wb.log(steps[step], step=step)
        wb.summary.update(run.summary_metrics())
        if self.options.artifacts and run.files:
            artifact = wandb.Artifact(artifact_name(name), type="pptarena-run")
            for file_name, path in run.files.items():
                artifact.add_file(str(path), name=file_name)
            wb.log_artifact(artifact)


@pptarena.hookimpl
def register_reporters(register: Any) -> None:
    """Register the ``wandb`` reporter."""
    register("wandb", WandbReporter)
