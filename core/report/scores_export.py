"""A run's scores as one flat table for pandas, R or a spreadsheet (``arena export scores``).

One row per (agent, task, epoch, judge, metric) of ``results.jsonl``: the judge's ``score`` first,
then each of its metrics. A pair no judge scored (an agent error, a timeout, an infrastructure
error...) is one row with its status and an empty judge, metric and value, so counting the distinct
(agent, task_id, epoch) gives every pair of the run. Beside the figures each row carries the pair's
status, error, duration, cost and token counts, and the task's metadata (``category``,
``edit_type``, ``difficulty``... whatever the dataset gives its tasks) as columns of their own.

Formats: ``csv`` (the standard library), ``jsonl`` and ``parquet`` (pyarrow, installed by the
``parquet`` extra). The columns are described in docs/export.md.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pptarena.report.data import RunData
from pptarena.run.folder.records import ResultRow
from pptarena.types import PptArenaError

FORMATS = ("csv", "jsonl", "parquet")
"""The formats :func:`export_scores` writes."""

PARQUET_EXTRA = "pip install 'pptarena[parquet]'"
"""What to install for ``--format parquet``."""

BASE_COLUMNS = (
    "run",
    "agent",
    "task_id",
    "epoch",
    "status",
    "judge",
    "metric",
    "value",
    "value_text",
    "error",
    "duration_s",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "judge_input_tokens",
    "judge_output_tokens",
)
"""The columns every export has, in order; the task's metadata columns follow."""

_INT_COLUMNS = ("epoch", "input_tokens", "output_tokens", "judge_input_tokens", "judge_output_tokens")
_FLOAT_COLUMNS = ("value", "duration_s", "cost_usd")
LIST_SEPARATOR = ";"
"""How a list in a task's metadata (``category``) is written in its one cell."""


class ScoresExportError(PptArenaError):
    """The scores cannot be exported (unknown format, pyarrow missing); the message says what to do."""


def _cell(value: Any) -> Any:
    """A metadata value for one cell: scalars as they are, lists joined with ``;``, other JSON as text."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float | bool) for v in value):
        return LIST_SEPARATOR.join(str(v) for v in value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _metric_value(value: Any) -> tuple[float | None, str | None]:
    """(value, value_text) of one metric: numbers and booleans (1.0/0.0) as a float, anything else
    as text (a list or mapping as JSON)."""
    if isinstance(value, bool):
        return (1.0 if value else 0.0), None
    if isinstance(value, int | float):
        return (float(value) if math.isfinite(value) else None), None
    if value is None:
        return None, None
    if isinstance(value, str):
        return None, value
    return None, json.dumps(value, sort_keys=True, ensure_ascii=False)


def _metrics(score: float | None, metrics: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A judge's figures as (metric, value): ``score`` first, then its metrics in their order.

    A metric that is itself called ``score`` is the judge's score again in every built-in judge; it
    is left out when equal and kept as ``metrics.score`` when not. Nested mappings are flattened
    with dotted names (``a.b``)."""
    yield "score", score
    for name, value in metrics.items():
        if name == "score":
            if value != score:
                yield "metrics.score", value
            continue
        yield from _flatten(str(name), value)


def _flatten(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            yield from _flatten(f"{name}.{key}", sub)
    else:
        yield name, value


def _usage(row: ResultRow, key: str) -> int | None:
    value = row.usage.get(key)
    return value if type(value) is int else None


def metadata_columns(rows: Iterable[ResultRow]) -> list[str]:
    """The task metadata keys of ``rows`` in first-seen order, named as columns (a key that is also
    one of :data:`BASE_COLUMNS` gets the prefix ``task_``)."""
    keys = dict.fromkeys(k for r in rows for k in r.metadata)
    return [f"task_{k}" if k in BASE_COLUMNS else str(k) for k in keys]


def pair_rows(run: str, row: ResultRow) -> list[dict[str, Any]]:
    """The flat rows of one result line (one pair's attempt), without the metadata columns' defaults."""
    cost = (row.cost or {}).get("usd")
    common: dict[str, Any] = {
        "run": run,
        "agent": row.agent,
        "task_id": row.task_id,
        "epoch": row.epoch,
        "status": str(row.status),
        "error": row.error,
        "duration_s": row.duration_s,
        "cost_usd": float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
        "input_tokens": _usage(row, "input_tokens"),
        "output_tokens": _usage(row, "output_tokens"),
        "judge_input_tokens": _usage(row, "judge_input_tokens"),
        "judge_output_tokens": _usage(row, "judge_output_tokens"),
    }
    for key, value in row.metadata.items():
        common[f"task_{key}" if key in BASE_COLUMNS else str(key)] = _cell(value)
    out = []
    for judge, block in row.scores.items():
        for metric, raw in _metrics(block.score, block.metrics):
            value, text = _metric_value(raw)
            out.append({**common, "judge": judge, "metric": metric, "value": value, "value_text": text})
    if not out:  # nothing scored: one row, so the pair is counted
        out.append({**common, "judge": None, "metric": None, "value": None, "value_text": None})
    return out


def score_rows(data: RunData, run: str | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of the flat export of a run: every result line of ``results.jsonl``, in file
    order, each row holding every column (None where a pair has no value)."""
    name = run or Path(data.run_dir).resolve().name
    columns = [*BASE_COLUMNS, *metadata_columns(data.rows)]
    rows = []
    for result in data.rows:
        for flat in pair_rows(name, result):
            rows.append({c: flat.get(c) for c in columns})
    return columns, rows


def _csv_bytes(columns: list[str], rows: list[dict[str, Any]]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
    return buf.getvalue().encode("utf-8")


def _jsonl_bytes(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _arrow_type(pa: Any, column: str, values: list[Any]) -> Any:
    """The parquet type of a column: fixed for the base columns, inferred for metadata (text when
    its values are of mixed kinds)."""
    if column in _INT_COLUMNS:
        return pa.int64()
    if column in _FLOAT_COLUMNS:
        return pa.float64()
    if column in BASE_COLUMNS:
        return pa.string()
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(type(v) is int for v in present):
        return pa.int64()
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def _parquet_bytes(columns: list[str], rows: list[dict[str, Any]]) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ScoresExportError(f"--format parquet needs pyarrow: {PARQUET_EXTRA}") from None
    arrays, fields = [], []
    for column in columns:
        values = [r[column] for r in rows]
        kind = _arrow_type(pa, column, values)
        if kind == pa.string():
            values = [None if v is None else str(v) for v in values]
        elif kind == pa.float64():
            values = [None if v is None else float(v) for v in values]
        arrays.append(pa.array(values, type=kind))
        fields.append(pa.field(column, kind))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def encode(columns: list[str], rows: list[dict[str, Any]], fmt: str) -> bytes:
    """Rows of :func:`score_rows` in ``fmt`` (``csv``, ``jsonl`` or ``parquet``) as bytes.

    :raises ScoresExportError: for an unknown format, or parquet without pyarrow (one line naming
        the extra to install).
    """
    if fmt == "csv":
        return _csv_bytes(columns, rows)
    if fmt == "jsonl":
        return _jsonl_bytes(rows)
    if fmt == "parquet":
        return _parquet_bytes(columns, rows)
    raise ScoresExportError(f"unknown format {fmt!r} (one of: {', '.join(FORMATS)})")


def default_path(run_dir: Path, fmt: str) -> Path:
    """Where ``arena export scores`` writes without ``--out``: ``RUN_DIR/export/scores.<fmt>``."""
    return Path(run_dir) / "export" / f"scores.{fmt}"


def export_scores(data: RunData, fmt: str, out: Path | None = None) -> tuple[Path, int]:
    """Write the flat scores of a run to ``out`` (default :func:`default_path`), replacing the file
    whole (a new file renamed into place); returns the path and the number of rows written.

    :raises ScoresExportError: see :func:`encode`.
    :raises OSError: when the file cannot be written.
    """
    from pptarena.trust.safeio import write_replacing

    columns, rows = score_rows(data)
    payload = encode(columns, rows, fmt)
    path = Path(out) if out is not None else default_path(data.run_dir, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_replacing(path, payload)
    return path, len(rows)
