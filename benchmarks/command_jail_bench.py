"""Per-pair cost of the ``command`` agent's jail (issue 23 items 6, 7): a trivial CLI, each network mode.

Usage: python benchmarks/command_jail_bench.py [--repeat 12]

The CLI is ``python -S -c "copy the input deck to the output"``: nearly all of the time measured is
the agent's own (workspace, jail, copy-out, deck check). Variants, one after the other:

- ``sandbox = "off"``: no jail (the CLI runs in a host folder);
- ``network = "none"``: the jail (own namespaces, tmpfs workspace copied out, cgroup), no network;
- ``network = "allowlist"`` (the default): the same plus the egress proxy and the in-jail relay;
- ``network = "open"``: the same plus slirp4netns (skipped when it is not installed).

Prints the median and minimum wall time of ``CommandAgent.edit`` per variant as JSON (the first
two runs of each are warm-up).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

VARIANTS = {
    "off": {"sandbox": "off"},
    "none": {"network": "none"},
    "allowlist": {},
    "open": {"network": "open"},
}


def one_pair(tmp: Path, options: dict[str, object]) -> float:
    """Wall time of one ``edit`` of a fresh pair."""
    from pptx import Presentation

    from pptarena.run.configuration.registry import get_registry
    from pptarena.types import AgentLog, ComponentContext, Task, Workspace

    tmp.mkdir(parents=True)
    deck = tmp / "deck.pptx"
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = "Hello"
    prs.save(str(deck))
    pair = tmp / "pair"
    pair.mkdir()
    ws = Workspace(
        dir=pair,
        input_deck=deck,
        output_deck=pair / "prediction.pptx",
        renderer=None,
        model=None,  # type: ignore[arg-type]
        log=AgentLog(pair / "agent.log.jsonl"),
        timeout=120,
    )
    copy = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"
    opts = {"command": [sys.executable, "-S", "-c", copy, "{input}", "{output}"], **options}
    ctx = ComponentContext(cache_dir=tmp, model=None, name="command", label="cli")  # type: ignore[arg-type]
    agent = get_registry().create("agents", "command", opts, ctx)
    t0 = time.perf_counter()
    agent.edit(Task(id="bench", instruction="Copy the deck.", original=deck), ws)
    return time.perf_counter() - t0


def main() -> None:
    """Run every variant and print the timings as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=12)
    args = parser.parse_args()
    from pptarena.plugins.agents.command.network import slirp_executable

    out: dict[str, object] = {"python": platform.python_version(), "machine": platform.machine()}
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in VARIANTS.items():
            if name == "open" and slirp_executable() is None:
                out[name] = "skipped: slirp4netns is not installed"
                continue
            times = [one_pair(Path(tmp) / f"{name}-{i}", options) for i in range(args.repeat + 2)][2:]
            out[name] = {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
