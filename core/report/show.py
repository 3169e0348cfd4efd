"""What ``arena run`` and ``arena report`` show at the end: the leaderboard on the terminal,
then ``report.html``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from pptarena.report.tables import print_tables, summary_tables
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.rundir import RunDir
from pptarena.run.folder.summary_record import Summary


def print_summary(
    run_dir: Path,
    summary: Summary,
    *,
    file: TextIO | None = None,
    rich: bool | None = None,
    html: bool = True,
) -> Path | None:
    """Print a run's leaderboard and breakdowns, then write ``report.html`` (returns its path).

    Called by ``arena run`` at the end and by ``arena report``. The HTML report never
    makes this fail: a problem writing it is printed as a warning and None returned.
    """
    from pptarena.report.data import load_run

    out = file or sys.stdout
    run_dir = Path(run_dir)
    data = None
    rows: list[ResultRow] = []
    rescores: dict[str, Summary] = {}
    try:
        data = load_run(run_dir)
        rows, rescores = data.rows, {k: v.summary for k, v in data.rescores.items()}
    except Exception:  # noqa: BLE001 - a summary alone can still be printed
        pass
    print_tables(summary_tables(summary, rows, rescores), file=out, rich=rich)
    out.write(f"\nResults: {RunDir(run_dir).results}\n")
    if not html:
        return None
    try:
        from pptarena.report.html import write_report

        path = write_report(run_dir, data=data)  # the run as read above (None: read again)
    except Exception as exc:  # noqa: BLE001 - the leaderboard is printed already
        out.write(f"warning: report.html could not be written: {type(exc).__name__}: {exc}\n")
        return None
    out.write(f"Report: {path}\n")
    return path
