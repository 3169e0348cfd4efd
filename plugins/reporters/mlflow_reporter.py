"""The ``mlflow`` reporter: logs a finished run to MLflow.

Without options it writes a local file store in the run folder (``<run>/mlruns``; browse it with
``MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri <run>/mlruns``); ``tracking_uri``
names any other store (``sqlite:///...``, ``http://mlflow.lab:5000``, ``databricks``). One MLflow
run per arena run, named after the run folder, in the experiment ``experiment``:

* params: the run's config flattened to ``a.b.c`` keys (secrets elided);
* metrics: the summary's figures (``<agent>/<judge>/mean``, ``.../success_rate``, status counts,
  cost) and, with ``pair_metrics``, each pair's score as ``score/<agent>/<judge>`` at step = the
  pair's index (task, epoch order; the ``step`` column of ``pairs.json``);
* artifacts: ``pairs.json`` (one row per agent, task and epoch: status, every judge's score,
  duration, cost, error; MLflow's table layout ``{"columns": [...], "data": [...]}``) and the run's
  ``results.jsonl``, ``summary.json``, ``manifest.json`` and ``report.html``;
* tags: ``pptarena.run_dir``, ``pptarena.results_digest`` and ``tags``.

A run whose results were logged already to the experiment (same run folder and results digest)
is not logged twice (``skip_if_logged``). ``mlflow`` (or ``mlflow-skinny``) is imported only when
the reporter is built: ``pip install 'pptarena[mlflow]'``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field

import pptarena
from pptarena import ComponentUnavailable

INSTALL_HINT = "mlflow is not available (install pptarena[mlflow])"
MAX_PARAM_VALUE = 6000  # MLflow's limit on a parameter's value (characters)
BATCH = 100  # params per log_batch call (MLflow's limit); metrics go 1000 at a time


class MlflowReporterOptions(pptarena.Options):
    """The ``[[reporters]]`` table of ``use = "mlflow"``."""

    tracking_uri: str | None = Field(
        None,
        description="MLflow tracking URI (a server, sqlite:///..., a folder); default: a file store in "
        "the run folder, <run>/mlruns",
    )
    experiment: str = Field("pptarena", min_length=1, description="MLflow experiment the run goes into")
    run_name: str | None = Field(None, description="name of the MLflow run (default: the run folder's name)")
    tags: dict[str, str] = Field(default_factory=dict, description="extra tags set on the MLflow run")
    pair_metrics: bool = Field(
        True, description="log each pair's score as metric score/<agent>/<judge> at step = the pair's index"
    )
    artifacts: bool = Field(
        True, description="upload results.jsonl, summary.json, manifest.json and report.html as artifacts"
    )
    telemetry: bool = Field(
        False,
        description="let MLflow send its own usage telemetry to MLflow's servers (off: the reporter sets "
        "MLFLOW_DISABLE_TELEMETRY while it works)",
    )
    skip_if_logged: bool = Field(
        True, description="do not log a run again whose results are logged already (same folder, same digest)"
    )


def metric_key(text: str) -> str:
    """``text`` with what MLflow refuses in a metric or param name replaced by ``_``."""
    return re.sub(r"[^\w.\- :/]", "_", text)[:250]


def is_file_store(uri: str | None) -> bool:
    """True for a tracking URI that is a folder (``file:...`` or a plain path)."""
    if uri is None:
        return False
    scheme = uri.partition(":")[0] if re.match(r"^[A-Za-z][\w+.-]*:", uri) else ""
    return scheme in ("", "file")


@contextmanager
def mlflow_environment(uri: str | None, telemetry: bool) -> Iterator[None]:
    """The environment MLflow reads while the reporter works, put back afterwards (variables the
    user set are left as they are):

    * ``MLFLOW_ALLOW_FILE_STORE=true`` when ``uri`` is a file store (MLflow 3 refuses one without it);
    * ``MLFLOW_DISABLE_TELEMETRY=true`` unless ``telemetry``: MLflow's usage telemetry goes to
      MLflow's servers, which a run logged to a local store has no reason to contact.
    """
    wanted = {}
    if is_file_store(uri):
        wanted["MLFLOW_ALLOW_FILE_STORE"] = "true"
    if not telemetry:
        wanted["MLFLOW_DISABLE_TELEMETRY"] = "true"
    added = [k for k in wanted if k not in os.environ]
    for key in added:
        os.environ[key] = wanted[key]
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


class MlflowReporter:
    """Logs a finished run to MLflow (see the module docstring for what goes where)."""

    Options = MlflowReporterOptions

    def __init__(self, options: MlflowReporterOptions, context: pptarena.ComponentContext):
        try:
            with mlflow_environment(None, options.telemetry):  # its telemetry starts at import
                import mlflow  # noqa: F401 - the tracker's package, only when a run uses it
                from mlflow.tracking import MlflowClient
        except ImportError as exc:
            raise ComponentUnavailable(INSTALL_HINT) from exc
        self.options = options
        self.context = context
        self._client_class = MlflowClient

    def tracking_uri(self, run: Any) -> str:
        """The configured tracking URI, else the file store ``<run>/mlruns``."""
        return self.options.tracking_uri or (Path(run.run_dir) / "mlruns").as_uri()

    def report(self, run: Any) -> str | None:
        """Log ``run`` (a :class:`pptarena.run.FinishedRun`); the line saying where."""
        uri = self.tracking_uri(run)
        where = f"experiment {self.options.experiment!r}, {uri}"
        with mlflow_environment(uri, self.options.telemetry):
            client = self._client_class(tracking_uri=uri)
            experiment = client.get_experiment_by_name(self.options.experiment)
            experiment_id = (
                experiment.experiment_id
                if experiment is not None
                else client.create_experiment(self.options.experiment)
            )
            digest = run.digest
            if self.options.skip_if_logged:
                found = client.search_runs(
                    [experiment_id],
                    filter_string=f"tags.`pptarena.results_digest` = '{digest}'",
                    max_results=50,
                )
                if any(r.data.tags.get("pptarena.run_dir") == str(run.run_dir) for r in found):
                    return f"MLflow: {run.name} is logged already ({where})"
            tags = {
                "pptarena.run_dir": str(run.run_dir),
                "pptarena.results_digest": digest,
                "pptarena.version": str(run.manifest.get("pptarena_version") or ""),
                **self.options.tags,
            }
            created = client.create_run(experiment_id, run_name=self.options.run_name or run.name, tags=tags)
            run_id = created.info.run_id
            try:
                self._log(client, run_id, run)
            except BaseException:
                client.set_terminated(run_id, status="FAILED")
                raise
            client.set_terminated(run_id, status="FINISHED")
        return f"MLflow: logged {run.name} as run {run_id} ({where})"

    def _log(self, client: Any, run_id: str, run: Any) -> None:
        from mlflow.entities import Metric, Param

        params = [
            Param(metric_key(k), str(v)[:MAX_PARAM_VALUE]) for k, v in sorted(run.flat_config().items())
        ]
        for i in range(0, len(params), BATCH):
            client.log_batch(run_id, params=params[i : i + BATCH])
        now = int(time.time() * 1000)  # MLflow wants a timestamp; steps carry the order
        metrics = [Metric(metric_key(k), v, now, 0) for k, v in sorted(run.summary_metrics().items())]
        if self.options.pair_metrics:
            metrics += [
                Metric(metric_key(f"score/{agent}/{judge}"), score, now, step)
                for agent, judge, step, score in run.pair_scores()
            ]
        for i in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=metrics[i : i + 1000])
        columns, rows = run.pair_table()
        client.log_dict(run_id, {"columns": columns, "data": rows}, "pairs.json")
        if self.options.artifacts:
            for path in run.files.values():
                client.log_artifact(run_id, str(path), "run")
        client.log_dict(run_id, {"config": run.config}, "config.json")


@pptarena.hookimpl
def register_reporters(register: Any) -> None:
    """Register the ``mlflow`` reporter."""
    register("mlflow", MlflowReporter)
