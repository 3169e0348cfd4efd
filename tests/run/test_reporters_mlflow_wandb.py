"""The built-in ``mlflow`` and ``wandb`` reporters against the real packages (issue 33, item 6).

A real run (fakeplugins: retitle, noop and crash on two tasks; no model) is logged to MLflow's file
store and to an offline W&B run, both inside the test's folder, and read back with the trackers' own
readers: ``MlflowClient`` for MLflow, W&B's record format (``wandb.proto``) for the ``.wandb`` file.
Nothing here may reach the network: one test runs both reporters in a network namespace without
routes. Skipped, with the reason, when the package is not installed (``pip install 'pptarena[mlflow]'``
/ ``'pptarena[wandb]'``).
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.folder.reporting import read_finished_run, report_run
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config
from tests.support.paths import PLUGIN_MODULES, ROOT

MODULES = {
    "mlflow": "pptarena.plugins.reporters.mlflow_reporter",
    "wandb": "pptarena.plugins.reporters.wandb_reporter",
}
HAS_MLFLOW = importlib.util.find_spec("mlflow") is not None
HAS_WANDB = importlib.util.find_spec("wandb") is not None
needs_mlflow = pytest.mark.skipif(
    not HAS_MLFLOW, reason="mlflow is not installed (pip install 'pptarena[mlflow]')"
)
needs_wandb = pytest.mark.skipif(
    not HAS_WANDB, reason="wandb is not installed (pip install 'pptarena[wandb]')"
)


def plugin_modules_to_add() -> list[str]:
    """The reporter modules that no installed entry point registers yet (registered through
    ``PPTARENA_PLUGINS`` then, so these tests pass before and after pyproject.toml lists them)."""
    declared = {ep.value for ep in md.entry_points(group="pptarena")}
    return [m for m in MODULES.values() if m not in declared]


def tracker_env(base: Path) -> dict[str, str]:
    """Environment that keeps both trackers' own folders (cache, settings, staging) in ``base``."""
    return {
        "WANDB_CACHE_DIR": str(base / "wandb-cache"),
        "WANDB_DATA_DIR": str(base / "wandb-data"),
        "WANDB_CONFIG_DIR": str(base / "wandb-config"),
        "WANDB_ARTIFACT_DIR": str(base / "wandb-artifacts"),
        "WANDB_SILENT": "true",
        "WANDB_MODE": "offline",
        "WANDB_ERROR_REPORTING": "false",
        "MLFLOW_ALLOW_FILE_STORE": "true",  # for our own reading client (the reporter sets it itself)
    }


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """fakeplugins and the two reporters in the process registry, for the module."""
    base = tmp_path_factory.mktemp("trackers-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(PLUGIN_MODULES))
        mp.setenv("PYTHONPATH", str(PLUGIN_MODULES))
        mp.setenv("PPTARENA_PLUGINS", ",".join(["fakeplugins", *plugin_modules_to_add()]))
        mp.setenv("PPTARENA_CACHE", str(tmp_path_factory.mktemp("cache")))
        mp.delenv("WANDB_API_KEY", raising=False)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        for key, value in tracker_env(base).items():
            mp.setenv(key, value)
        reset_registry()
        yield get_registry()
        reset_registry()


@pytest.fixture(scope="module")
def finished_run(registry, tmp_path_factory) -> Path:
    """A real finished run (no reporters in its config) with a report.html."""
    base = tmp_path_factory.mktemp("tracked")
    cfg = write_run_config(base / "fake.toml", fake_run_toml(2, ["retitle", "noop", "crash"]))
    run_dir = base / "run"
    Runner(load_config(cfg, registry), registry, run_dir, quiet=True).run()
    (run_dir / "report.html").write_text("<html><body>pptarena report</body></html>", encoding="utf-8")
    return run_dir


@pytest.fixture
def run_copy(finished_run, tmp_path) -> Path:
    """This test's own copy of the run (the reporters write into the run folder)."""
    return shutil.copytree(finished_run, tmp_path / finished_run.name)


def reporting_config(tmp_path: Path, registry, reporters: list):
    """The run's config plus ``[[reporters]]`` tables."""
    text = fake_run_toml(2, ["retitle", "noop", "crash"], reporters=reporters)
    return load_config(write_run_config(tmp_path / "fake.toml", text), registry)


def test_the_reporters_are_registered(registry):
    assert {"mlflow", "wandb"} <= set(registry.names("reporters"))
    for name in ("mlflow", "wandb"):
        assert all(o["description"] for o in registry.get("reporters", name).describe_options())


def test_importing_the_plugin_modules_does_not_import_the_trackers():
    code = (
        "import sys, pptarena.plugins.reporters.mlflow_reporter, pptarena.plugins.reporters.wandb_reporter;"
        "print(sorted(m for m in ('mlflow', 'wandb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["mlflow", "wandb"])
def test_a_missing_package_names_the_extra(registry, run_copy, tmp_path, monkeypatch, name):
    monkeypatch.setitem(sys.modules, name, None)  # import mlflow / wandb now raises ImportError
    config = reporting_config(tmp_path, registry, [use(name)])
    (line,) = report_run(config, registry, run_copy, None)
    assert f"{name} is not available (install pptarena[{name}])" in line
    assert line.startswith(f"warning: reporter '{name}' ({name}) could not start:")


# --------------------------------------------------------------------------- MLflow


def mlflow_client(run_dir: Path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=(run_dir / "mlruns").as_uri())


@needs_mlflow
def test_mlflow_logs_config_pair_scores_summary_and_report(registry, run_copy, tmp_path):
    config = reporting_config(
        tmp_path, registry, [use("mlflow", experiment="arena-tests", tags={"who": "ci"})]
    )
    (line,) = report_run(config, registry, run_copy, None)
    assert line.startswith(f"MLflow: logged {run_copy.name} as run ")
    assert (run_copy / "mlruns").is_dir()
    client = mlflow_client(run_copy)
    experiment = client.get_experiment_by_name("arena-tests")
    (logged,) = client.search_runs([experiment.experiment_id])
    assert logged.info.run_name == run_copy.name and logged.info.status == "FINISHED"
    assert logged.data.tags["who"] == "ci" and logged.data.tags["pptarena.run_dir"] == str(run_copy)
    finished = read_finished_run(run_copy)
    # params: the config, flattened (the run's own config as the manifest stored it)
    params = logged.data.params
    assert params["agents.0.use"] == "retitle" and params["dataset.use"] == "fake"
    assert params["judges.0.use"] == "title" and params["dataset.count"] == "2"
    # summary metrics
    summary = json.loads((run_copy / "summary.json").read_text())
    assert (
        logged.data.metrics["retitle/title/mean"] == summary["agents"]["retitle"]["judges"]["title"]["mean"]
    )
    assert logged.data.metrics["crash/status/agent_error"] == 2
    # per-pair scores: one point per scored pair, at step = the pair's index
    rows = [json.loads(line) for line in (run_copy / "results.jsonl").read_text().splitlines()]
    for agent in ("retitle", "noop"):
        history = client.get_metric_history(logged.info.run_id, f"score/{agent}/title")
        expected = {
            finished.steps()[(r["task_id"], 1)]: r["scores"]["title"]["score"]
            for r in rows
            if r["agent"] == agent
        }
        assert {m.step: m.value for m in history} == expected and len(expected) == 2
    assert client.get_metric_history(logged.info.run_id, "score/crash/title") == []
    # artifacts: the pair table, the config and the run's own files
    paths = {a.path for a in client.list_artifacts(logged.info.run_id)}
    assert {"pairs.json", "config.json", "run"} <= paths
    run_files = {a.path for a in client.list_artifacts(logged.info.run_id, "run")}
    assert run_files == {
        "run/results.jsonl",
        "run/summary.json",
        "run/manifest.json",
        "run/report.html",
    }
    local = Path(client.download_artifacts(logged.info.run_id, "run/report.html", str(tmp_path)))
    assert local.read_bytes() == (run_copy / "report.html").read_bytes()
    table = json.loads(
        Path(client.download_artifacts(logged.info.run_id, "pairs.json", str(tmp_path))).read_text()
    )
    assert table["columns"][:6] == ["step", "agent", "task_id", "epoch", "status", "title"]
    assert len(table["data"]) == 6
    assert ["retitle", "task-01", "scored", 1.0] == [table["data"][5][i] for i in (1, 2, 4, 5)]


@needs_mlflow
def test_mlflow_logs_a_run_once_and_again_after_new_results(registry, run_copy, tmp_path):
    config = reporting_config(tmp_path, registry, [use("mlflow")])
    report_run(config, registry, run_copy, None)
    (again,) = report_run(config, registry, run_copy, None)
    assert again == (
        f"MLflow: {run_copy.name} is logged already (experiment 'pptarena', {(run_copy / 'mlruns').as_uri()})"
    )
    client = mlflow_client(run_copy)
    experiment = client.get_experiment_by_name("pptarena")
    assert len(client.search_runs([experiment.experiment_id])) == 1
    with (run_copy / "results.jsonl").open("a") as f:  # a resumed run added a line: new results
        f.write((run_copy / "results.jsonl").read_text().splitlines()[0] + "\n")
    (line,) = report_run(config, registry, run_copy, None)
    assert line.startswith("MLflow: logged ")
    assert len(client.search_runs([experiment.experiment_id])) == 2


@needs_mlflow
def test_mlflow_takes_a_configured_tracking_uri(registry, run_copy, tmp_path):
    store = tmp_path / "elsewhere" / "mlruns"
    config = reporting_config(
        tmp_path, registry, [use("mlflow", tracking_uri=store.as_uri(), artifacts=False)]
    )
    (line,) = report_run(config, registry, run_copy, None)
    assert line.startswith("MLflow: logged ") and store.as_uri() in line
    assert not (run_copy / "mlruns").exists()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store.as_uri())
    (logged,) = client.search_runs([client.get_experiment_by_name("pptarena").experiment_id])
    assert {a.path for a in client.list_artifacts(logged.info.run_id)} == {"pairs.json", "config.json"}


@needs_mlflow
def test_mlflow_sets_its_switches_only_while_it_works(registry, run_copy, tmp_path, monkeypatch):
    """The file store is allowed and MLflow's telemetry (sent to MLflow's servers) is off while the
    reporter logs; both variables are gone again afterwards."""
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    monkeypatch.delenv("MLFLOW_DISABLE_TELEMETRY", raising=False)
    seen = []
    original = MlflowClient.log_batch

    def spy(self, *args, **kwargs):
        seen.append((os.environ.get("MLFLOW_ALLOW_FILE_STORE"), os.environ.get("MLFLOW_DISABLE_TELEMETRY")))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_batch", spy)
    (line,) = report_run(reporting_config(tmp_path, registry, [use("mlflow")]), registry, run_copy, None)
    assert line.startswith("MLflow: logged ")
    assert seen and set(seen) == {("true", "true")}
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ and "MLFLOW_DISABLE_TELEMETRY" not in os.environ


# --------------------------------------------------------------------------- Weights & Biases

LEVELDB_BLOCK = 32768


def wandb_records(path: Path) -> list:
    """The records of a ``.wandb`` file, parsed with W&B's own protobuf messages.

    The file is W&B's transaction log: a 7-byte header (``:W&B``, magic, version), then LevelDB-log
    blocks of 32 KiB holding chunks (crc32, length, type: full / first / middle / last) of
    serialized ``wandb_internal_pb2.Record`` messages.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0)
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        left = LEVELDB_BLOCK - pos % LEVELDB_BLOCK
        if left < 7:  # the block's tail is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            break
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def offline_run_folder(root: Path) -> Path:
    (folder,) = (root / "wandb").glob("offline-run-*")
    return folder


@needs_wandb
def test_wandb_offline_logs_config_pair_table_summary_and_report(registry, run_copy, tmp_path):
    config = reporting_config(tmp_path, registry, [use("wandb", project="arena-tests", tags=["ci"])])
    (line,) = report_run(config, registry, run_copy, None)
    folder = offline_run_folder(run_copy)
    assert line == f"W&B: logged {run_copy.name} offline to {folder} (upload later: wandb sync {folder})"
    (log,) = folder.glob("*.wandb")
    records = wandb_records(log)
    by_kind: dict[str, list] = {}
    for record in records:
        by_kind.setdefault(record.WhichOneof("record_type"), []).append(
            getattr(record, record.WhichOneof("record_type"))
        )
    # the run and its config
    (run_record,) = by_kind["run"]
    assert run_record.project == "arena-tests" and run_record.display_name == run_copy.name
    assert list(run_record.tags) == ["ci"]
    config_items = {item.key: json.loads(item.value_json) for item in run_record.config.update}
    finished = read_finished_run(run_copy)
    assert config_items["agents"] == finished.config["agents"]
    assert config_items["dataset"] == {"use": "fake", "root": "data", "count": 2}
    # per-pair scores: history rows at step = the pair's index
    history: dict[int, dict[str, object]] = {}
    for h in by_kind["history"]:
        items = {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in h.item}
        history.setdefault(items["_step"], {}).update(items)
    rows = [json.loads(line) for line in (run_copy / "results.jsonl").read_text().splitlines()]
    for r in rows:
        step = finished.steps()[(r["task_id"], 1)]
        key = f"score/{r['agent']}/title"
        if r["status"] == "scored":
            assert history[step][key] == r["scores"]["title"]["score"]
        else:
            assert key not in history[step]
    assert history[1]["pairs/_type"] == "table-file" and history[1]["pairs/nrows"] == 6
    # the table itself, as W&B wrote it into the run's files
    (table_file,) = (folder / "files" / "media" / "table").glob("pairs_*.table.json")
    table = json.loads(table_file.read_text())
    assert table["columns"] == finished.pair_table()[0]
    assert sorted(map(tuple, ([d[1], d[2], d[5]] for d in table["data"]))) == sorted(
        (r["agent"], r["task_id"], (r["scores"].get("title") or {}).get("score")) for r in rows
    )
    # the summary's figures
    summary_items = {}
    for s in by_kind["summary"]:
        summary_items.update({"/".join(u.nested_key) or u.key: json.loads(u.value_json) for u in s.update})
    summary = json.loads((run_copy / "summary.json").read_text())
    assert summary_items["retitle/title/mean"] == summary["agents"]["retitle"]["judges"]["title"]["mean"]
    assert summary_items["crash/status/agent_error"] == 2
    # the run's files as an artifact
    (artifact,) = [a for a in by_kind["artifact"] if a.type == "pptarena-run"]
    assert artifact.name == run_copy.name
    assert {c.path for c in artifact.manifest.contents} == {
        "results.jsonl",
        "summary.json",
        "manifest.json",
        "report.html",
    }
    assert by_kind["exit"][0].exit_code == 0


@needs_wandb
def test_wandb_writes_under_a_configured_dir_and_disabled_logs_nothing(registry, run_copy, tmp_path):
    elsewhere = tmp_path / "wb"
    config = reporting_config(tmp_path, registry, [use("wandb", dir=str(elsewhere), label="wb")])
    (line,) = report_run(config, registry, run_copy, None)
    assert str(offline_run_folder(elsewhere)) in line and not (run_copy / "wandb").exists()
    assert (
        report_run(
            reporting_config(tmp_path, registry, [use("wandb", mode="disabled")]), registry, run_copy, None
        )
        == []
    )
    assert not (run_copy / "wandb").exists()


# --------------------------------------------------------------------------- no network


@pytest.mark.skipif(not (HAS_MLFLOW and HAS_WANDB), reason="needs both mlflow and wandb installed")
@pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare (util-linux) is not installed")
def test_both_reporters_work_without_any_network(registry, run_copy, tmp_path):
    """Both reporters, with their defaults, in a network namespace without routes: they finish
    (nothing waits on a connection) and log what they log with the network."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"user network namespaces are not available here: {probe.stderr.decode().strip()}")
    cfg = write_run_config(
        tmp_path / "fake.toml",
        fake_run_toml(2, ["retitle", "noop", "crash"], reporters=[use("mlflow"), use("wandb")]),
    )
    script = textwrap.dedent(
        f"""
        import socket, sys
        from pathlib import Path
        s = socket.socket(); s.settimeout(5)
        assert s.connect_ex(("1.1.1.1", 443)) != 0, "the namespace has a route out"
        from pptarena.run.configuration.config import load_config
        from pptarena.run.configuration.registry import get_registry
        from pptarena.run.folder.reporting import report_run
        config = load_config({str(cfg)!r}, get_registry())
        for line in report_run(config, get_registry(), Path({str(run_copy)!r}), None):
            print(line)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN_MODULES), str(ROOT)])}
    env.pop("MLFLOW_ALLOW_FILE_STORE", None)
    done = subprocess.run(
        ["unshare", "-rn", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout + done.stderr[-2000:]
    assert lines[0].startswith("MLflow: logged ") and lines[1].startswith("W&B: logged ")
    client = mlflow_client(run_copy)
    (logged,) = client.search_runs([client.get_experiment_by_name("pptarena").experiment_id])
    assert "retitle/title/mean" in logged.data.metrics
    assert len(wandb_records(next(offline_run_folder(run_copy).glob("*.wandb")))) > 5
