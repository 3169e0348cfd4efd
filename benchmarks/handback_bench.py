"""The harness's CPU time to read one long protocol line from a jailed worker (issue 31 item 5).

Usage: python benchmarks/handback_bench.py [--mb 20 40 80 200 500]

For each size, a stand-in worker (``/bin/sh``: ``ready``, then a ``done`` line whose ``archive`` is
that many MB of ``A``) is read by :class:`pptarena.run.jail.jail_pool.JailWorker` as a pair's hand-back
is (the reader of tests/security/test_trust_claims.py, ``READER_CHILD``). Prints JSON: per size the
harness's CPU time (``time.process_time``: what reading costs the harness, not the writer's time)
and wall time of :meth:`JailWorker.read`, and the bytes it searched for the line's end
(``scanned``; a linear reader searches each byte once). Each size runs in a fresh interpreter so one
size's memory does not weigh on the next.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' helper


def measure(mb: int) -> dict[str, object]:
    """Read one ``done`` line with an ``mb`` MB archive in a fresh interpreter; its figures."""
    from tests.security.test_trust_claims import read_reply_line

    return {"mb": mb, **read_reply_line(mb * 1_000_000)}


def main() -> None:
    """Measure each size and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[20, 40, 80, 200, 500])
    args = parser.parse_args()
    results = [measure(mb) for mb in args.mb]
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                "python": platform.python_version(),
                "load": os.getloadavg(),
                "date": time.strftime("%Y-%m-%d"),
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
