"""The run page's leaderboard part, computed in a child process (``python -m pptarena.view.summaryjob
RUN_DIR`` prints it as JSON), so the server's memory stays small whatever the run's size: reading
100,000 result lines and their statistics takes hundreds of megabytes for a few seconds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def summary_part(run_dir: Path) -> str:
    """The leaderboard, comparisons, fingerprints and plots of ``report.html``
    (:func:`pptarena.report.top.page_top` without the report's own page header)."""
    from pptarena.report.data import load_run
    from pptarena.report.html import plots_html, table_html
    from pptarena.report.top import page_top

    data = load_run(run_dir)
    problems = [f"skipped a result line: {p}" for p in data.problems[:20]]
    parts = page_top(data, problems, table_html, plots_html, f"{len(data.rows)} results")
    return "".join(parts[1:])  # parts[0] is the report's own page header


def main() -> None:
    """Print ``{"html": ...}`` or ``{"error": ...}`` for the run folder given."""
    try:
        out = {"html": summary_part(Path(sys.argv[1]))}
    except Exception as exc:  # noqa: BLE001 - reported to the server, shown on the page
        out = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
