"""What an agent from its own environment (``package = ...``) costs: building the environment once,
reading it (the jailed probe) at every config load, and a cached load.

    python benchmarks/agent_env_bench.py [--repeat 5]

Prints, in seconds: the first build of a small wheel's environment (pip in its jail), the probe that
reads its agents and validates the options (one jail start), a whole config load with the environment
cached, and, as the baseline, the same config load with the built-in ``noop`` agent instead.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.agent_env_fixtures import env_agent_config, write_wheel  # noqa: E402

AGENT = '''
import shutil
import pptarena
from pptarena.types import Component, Prediction


class Copy(Component):
    """Hands in the input deck."""

    def edit(self, task, workspace):
        shutil.copyfile(workspace.input_deck, workspace.output_deck)
        return Prediction(path=workspace.output_deck)


@pptarena.hookimpl
def register_agents(register):
    register("copy", Copy)
'''


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    """Measure and print the four figures (median of ``--repeat`` where it repeats)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry
    from pptarena.run.jail.agent_env import ensure_env
    from pptarena.run.jail.agent_probe import probe

    registry = get_registry()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        wheel = write_wheel(
            base / "dist",
            "bench-agent",
            "0.1.0",
            {"bench_agent/__init__.py": AGENT},
            {"agents-copy": "bench_agent"},
        )
        cache = base / "cache"
        build = _timed(lambda: ensure_env(str(wheel), base, cache))
        env = ensure_env(str(wheel), base, cache)
        probes = [_timed(lambda: probe(env, [{"use": "copy", "options": {}}])) for _ in range(args.repeat)]
        config = env_agent_config(base, str(wheel), "copy", cache)
        loads = [_timed(lambda: load_config(config, registry)) for _ in range(args.repeat)]
        plain = base / "plain.toml"
        plain.write_text(
            config.read_text().replace('use = "copy"', 'use = "noop"').replace(f'package = "{wheel}"', "")
        )
        baseline = [_timed(lambda: load_config(plain, registry)) for _ in range(args.repeat)]
    print(f"first build of the environment: {build:.2f} s")
    print(f"probe (one jail start): median {statistics.median(probes):.3f} s of {args.repeat}")
    print(f"config load, environment cached: median {statistics.median(loads):.3f} s of {args.repeat}")
    print(
        f"config load, built-in noop (baseline): median {statistics.median(baseline):.3f} s of {args.repeat}"
    )


if __name__ == "__main__":
    main()
