"""The model-call layer against the provider simulator (issue 32, items 2 and 4): rate limits and caching.

**Rate limits.** The real harness (``pptarena.run.runner.Runner``, in a child process per
configuration) runs the ``hybrid`` agent (PPTPilot) under ``--labels`` labels (default 4) on the 12
demo tasks, ``jobs = 4``, judged by the ``dual`` judge; agent and judge share one ``openai``
backend pointed at a :class:`~pptarena.models.sim.ProviderSim` (in its own process) at 600 RPM /
150k TPM with 5 % injected faults and lognormal latency (median 0.4 s). Side by side, each with a
fresh simulator: no limits at all (the compute floor), fixed ``concurrency`` 4, 16 and 64 with
``adaptive = false`` (the old behaviour: nothing learned from headers, a 429 is an ordinary retry)
and the adaptive default. Per configuration: wall time, generation requests, 429s, the limit-bound
time (admitted requests / RPM or admitted tokens / TPM, whichever is longer, as the simulator
counted them, plus the slowest single chain: the longest pair's duration less the time its calls
waited for the limiter or backed off), the same less the simulator's initial burst (its buckets
start full, a minute's worth), rows scored and not, lost and duplicated rows (by (agent, task,
epoch) in results.jsonl), and whether every unscored row's error carries the provider's error
(``openai: ...``).

Why 48 pairs and not the issue's 300: every pair costs about 4 requests and 14k tokens as the
simulator counts them (prompt + the output tokens asked for), so tokens bind and 300 pairs would
take about 28 minutes per configuration at 150k TPM. The renderer is a stand-in (``blocks`` from
provider_bench_plugin.py: one small PNG per slide drawn from a hash of the slide's XML) and the
agent's ``render_check`` is off: on 2 cores LibreOffice would dominate and hide the model-call
layer.

Two more configurations, not run by default (``--configs shallow,headerless``), look at the
limiter closer: the adaptive default against simulator buckets holding 10 s' worth (100 requests,
25k tokens) instead of a minute's, and the same on the ``google`` backend (Gemini's wire: no
rate-limit headers, so ``rpm`` and ``tpm`` are given).

**Caching.** The ``dual`` judge alone on the ``anthropic`` backend (model ``claude-sonnet-4-5``,
priced from the bundled table) judges 3 agents x the 12 demo tasks twice: simulator caching on,
then ``SimConfig(caching=False)``; compared: the judge's input cost (cache reads and writes at their
rates, from the rows' usage; checked against the rows' cost fields) and the verdicts. Two agent sets
(``hybrid, code, hybrid+verify``: every prediction gets IF and VQ calls; ``noop, oracle, hybrid``:
the judge's rules score noop and oracle without an IF call) and two image sizes as the simulator
counts them (85 tokens, its default; 786, what Anthropic counts for a 1024x576 render).

    python benchmarks/provider_bench.py [--quick] [--labels N] [--only limits|caching]
                                        [--configs PREFIXES] [--json PATH] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

RPM, TPM, FAULTS, SEED = 600, 150_000, 0.05, 1
LATENCY = "lognormal:0.4,0.3"
JUDGE_MODEL = "claude-sonnet-4-5"
AGENT_MODEL = "gpt-sim"
CONFIG_TIMEOUT = 420.0  # seconds: a configuration still running then is stopped and reported as such
PROVIDER_PREFIXES = ("openai:", "anthropic:")


# --------------------------------------------------------------------------- the simulator's process


def serve_sim(spec: dict[str, Any]) -> None:
    """Child: serve a ProviderSim built from ``spec`` (SimConfig fields); print its URL, then answer
    ``stats`` / ``stop`` lines on stdin with one JSON line each. The simulator's request limiter is
    wrapped to count what it admitted (requests, tokens) and refused, in 5-second bins."""
    from pptarena.models.sim import ProviderSim, SimConfig

    sim = ProviderSim(SimConfig(**spec)).start()
    limiter = sim.engine.limiter
    check = limiter.check
    lock = threading.Lock()
    counts = {"admitted": 0, "admitted_tokens": 0, "refused": 0, "too_large": 0}
    bins: dict[int, list[int]] = {}
    t0 = time.monotonic()

    def counting_check(api_key: str, model: str, cost: int) -> Any:
        decision = check(api_key, model, cost)
        with lock:
            row = bins.setdefault(int((time.monotonic() - t0) // 5), [0, 0, 0])
            if decision.ok:
                counts["admitted"] += 1
                counts["admitted_tokens"] += decision.cost
                row[0] += 1
                row[1] += decision.cost
            else:
                counts["refused"] += 1
                counts["too_large"] += decision.reason == "too_large"
                row[2] += 1
        return decision

    limiter.check = counting_check  # type: ignore[method-assign]
    print(json.dumps({"url": sim.url}), flush=True)
    for line in sys.stdin:
        if line.strip() == "stats":
            with lock:
                extra = {**counts, "bins": {k: bins[k] for k in sorted(bins)}}
            print(json.dumps({**sim.stats(), **extra}, default=str), flush=True)
        elif line.strip() == "stop":
            break
    sim.stop()


class SimProcess:
    """A ProviderSim in a process of its own (the harness's threads do not share its GIL)."""

    def __init__(self, **spec: Any):
        env = {**os.environ, "PYTHONPATH": _pythonpath()}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--_sim", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        if not first:
            raise RuntimeError("the simulator's process did not start")
        self.url = json.loads(first)["url"]

    def stats(self) -> dict[str, Any]:
        """The simulator's stats plus the admitted/refused counts."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        """Stop the simulator and wait for its process."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> SimProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _pythonpath() -> str:
    return os.pathsep.join(p for p in (str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


# --------------------------------------------------------------------------- one harness run


def child_run(config: str, out: str, record: str) -> None:
    """Child: run the config with the real Runner; write wall time and the limiter's state (sampled
    every second, and at the end) to ``record``."""
    from pptarena.models.limiter_service import local_snapshots
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry
    from pptarena.run.runner import Runner

    registry = get_registry()
    runner = Runner(load_config(Path(config), registry), registry, Path(out), quiet=True)
    timeline: list[dict[str, Any]] = []
    done = threading.Event()
    t0 = time.perf_counter()

    def sample() -> None:
        while not done.wait(1.0):
            for account, snap in local_snapshots().items():
                timeline.append({"t": round(time.perf_counter() - t0, 1), "account": account, **snap})

    threading.Thread(target=sample, daemon=True).start()
    runner.run()
    wall = time.perf_counter() - t0
    done.set()
    data = {"wall_s": wall, "limiters": local_snapshots(), "timeline": timeline}
    Path(record).write_text(json.dumps(data, default=str), encoding="utf-8")


def run_config(tmp: Path, name: str, body: str, timeout: float) -> dict[str, Any]:
    """Run one config in a child process (killed after ``timeout`` s); its rows and record."""
    cfg = tmp / f"{name}.toml"
    cfg.write_text(body, encoding="utf-8")
    out = tmp / f"run-{name}"
    record = tmp / f"{name}.record.json"
    env = {
        **os.environ,
        "PYTHONPATH": _pythonpath(),
        "PPTARENA_PLUGINS": "provider_bench_plugin",
        "SIM_KEY": "sk-bench",
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--_run", str(cfg), str(out), str(record)],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    timed_out = False
    try:
        log, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            log, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log, _ = proc.communicate()
    elapsed = time.perf_counter() - t0
    (tmp / f"{name}.log").write_text(log or "", encoding="utf-8")
    data: dict[str, Any] = {"timed_out": timed_out, "exit": proc.returncode, "child_s": elapsed}
    if record.is_file():
        data.update(json.loads(record.read_text(encoding="utf-8")))
    else:
        data["wall_s"] = elapsed
    if proc.returncode and not timed_out:
        print(f"  {name}: the run exited {proc.returncode}; last lines:\n{(log or '')[-2000:]}", flush=True)
    results = out / "results.jsonl"
    data["rows"] = (
        [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
        if results.is_file()
        else []
    )
    return data


# --------------------------------------------------------------------------- configs


def limits_config(
    sim_url: str, labels: int, backend_extra: str, limit: int | None, backend: str = "openai"
) -> str:
    """The rate-limit part's config: ``labels`` hybrid agents × the demo tasks, dual judge, one
    backend on the simulator (``openai``, or ``google``: Gemini's wire, which has no rate-limit
    headers) with ``backend_extra`` (its limiter options)."""
    model = f"openai/{AGENT_MODEL}" if backend == "openai" else "google/gemini-sim"
    base_url = f"{sim_url}/v1" if backend == "openai" else sim_url
    agents = "".join(
        f'[[agents]]\nuse = "hybrid"\nlabel = "hybrid-{i:02d}"\nmodel = "{model}"\nrender_check = false\n\n'
        for i in range(1, labels + 1)
    )
    return (
        f"[run]\njobs = 4\ntask_timeout = 600\n{f'limit = {limit}' if limit else ''}\n\n"
        '[dataset]\nuse = "demo"\n\n'
        f"{agents}"
        '[renderer]\nuse = "blocks"\n\n'
        f'[[judges]]\nuse = "dual"\nmodel = "{model}"\n\n'
        f'[backends.{backend}]\nbase_url = "{base_url}"\napi_key = {{ env = "SIM_KEY" }}\n{backend_extra}'
    )


CACHING_AGENTS = {
    "hybrid, code, hybrid+verify": (
        f'[[agents]]\nuse = "hybrid"\nmodel = "openai/{AGENT_MODEL}"\nrender_check = false\n\n'
        f'[[agents]]\nuse = "code"\nmodel = "openai/{AGENT_MODEL}"\nrender_check = false\n\n'
        f'[[agents]]\nuse = "hybrid"\nlabel = "hybrid-verify"\nmodel = "openai/{AGENT_MODEL}"\n'
        "render_check = false\nloops = 1\n\n"
    ),
    "noop, oracle, hybrid": (
        '[[agents]]\nuse = "noop"\n\n[[agents]]\nuse = "oracle"\n\n'
        f'[[agents]]\nuse = "hybrid"\nmodel = "openai/{AGENT_MODEL}"\nrender_check = false\n\n'
    ),
}
"""The caching part's agent sets: three agents whose every prediction the judge asks the model about
(IF and VQ calls), and the demo's floor and ceiling with one model agent (the judge's rules score
noop's unchanged deck and oracle's copy of the target without an IF call)."""

IMAGE_TOKENS = {
    85: "the simulator's default (OpenAI's low-detail figure)",
    786: "what Anthropic counts for a 1024x576 render (width x height / 750)",
}


def caching_config(sim_url: str, agents: str, limit: int | None) -> str:
    """The caching part's config: ``agents`` x the demo tasks, the dual judge alone on the anthropic
    backend (the agents' calls go to the openai backend of the same simulator)."""
    return (
        f"[run]\njobs = 2\n{f'limit = {limit}' if limit else ''}\n\n"
        '[dataset]\nuse = "demo"\n\n'
        f"{agents}"
        '[renderer]\nuse = "blocks"\n\n'
        f'[[judges]]\nuse = "dual"\nmodel = "anthropic/{JUDGE_MODEL}"\n\n'
        f'[backends.openai]\nbase_url = "{sim_url}/v1"\napi_key = {{ env = "SIM_KEY" }}\n\n'
        f'[backends.anthropic]\nbase_url = "{sim_url}"\napi_key = {{ env = "SIM_KEY" }}\n'
    )


# --------------------------------------------------------------------------- analysis


def row_checks(rows: list[dict[str, Any]], expected: set[tuple[str, str, int]]) -> dict[str, Any]:
    """Scored / not scored, lost / duplicated rows, and the errors of the unscored ones."""
    keys = Counter((r["agent"], r["task_id"], int(r.get("epoch") or 1)) for r in rows)
    unscored = [r for r in rows if r["status"] != "scored"]
    named = [r for r in unscored if any(p in (r.get("error") or "") for p in PROVIDER_PREFIXES)]
    return {
        "rows": len(rows),
        "scored": len(rows) - len(unscored),
        "not_scored": len(unscored),
        "statuses": dict(Counter(r["status"] for r in unscored)),
        "lost": len(expected - set(keys)),
        "duplicated": sum(n - 1 for n in keys.values() if n > 1),
        "unexpected": len(set(keys) - expected),
        "unscored_name_provider": len(named),
        "unscored_errors": [f"{r['status']}: {(r.get('error') or '')[:300]}" for r in unscored],
    }


def slowest_chain(rows: list[dict[str, Any]]) -> float:
    """The longest pair's own time: its duration less what its calls waited (limiter, backoff)."""
    best = 0.0
    for r in rows:
        usage = r.get("usage") or {}
        waited = (int(usage.get("wait_ms") or 0) + int(usage.get("judge_wait_ms") or 0)) / 1000.0
        best = max(best, float(r.get("duration_s") or 0.0) - waited)
    return best


GENERATION_ROUTES = ("/v1/chat/completions", "/v1/responses", "/v1/messages", ":generateContent")


def limits_summary(
    name: str,
    data: dict[str, Any],
    stats: dict[str, Any],
    expected: set,
    bursts: tuple[float, float] = (RPM, TPM),
) -> dict[str, Any]:
    """One configuration's line of the table (see the module docstring); ``bursts``: what the
    simulator's request and token buckets hold when full."""
    rows = data["rows"]
    gen = sum(int(n) for route, n in stats["by_path"].items() if route.endswith(GENERATION_ROUTES))
    throttled = int(stats["by_status"].get("429", 0))
    req_bound = stats["admitted"] / RPM * 60.0
    tok_bound = stats["admitted_tokens"] / TPM * 60.0
    chain = slowest_chain(rows)
    binds = "tokens" if tok_bound >= req_bound else "requests"
    bound = max(req_bound, tok_bound) + chain
    # the simulator's buckets start full: nothing can finish before the rest is paid
    strict = (
        max(max(0, stats["admitted"] - bursts[0]) / RPM, max(0, stats["admitted_tokens"] - bursts[1]) / TPM)
        * 60.0
        + chain
    )
    wall = float(data["wall_s"])
    checks = row_checks(rows, expected)
    throttled_calls = sum(
        int((r.get("usage") or {}).get("throttled") or 0)
        + int((r.get("usage") or {}).get("judge_throttled") or 0)
        for r in rows
    )
    return {
        "config": name,
        "wall_s": round(wall, 1),
        "timed_out": data.get("timed_out", False),
        "requests": gen,
        "admitted": stats["admitted"],
        "admitted_tokens": stats["admitted_tokens"],
        "status_429": throttled,
        "share_429": round(throttled / gen, 4) if gen else 0.0,
        "faults": stats.get("faults", {}),
        "no_answer": int(stats["by_status"].get("0", 0)),
        "requests_bound_s": round(req_bound, 1),
        "tokens_bound_s": round(tok_bound, 1),
        "binds": binds,
        "slowest_chain_s": round(chain, 1),
        "limit_bound_s": round(bound, 1),
        "ratio": round(wall / bound, 3) if bound else None,
        "strict_bound_s": round(strict, 1),
        "ratio_strict": round(wall / strict, 3) if strict else None,
        "max_in_flight_at_sim": stats.get("max_in_flight"),
        "throttled_seen_by_calls": throttled_calls,
        "limiters": data.get("limiters", {}),
        "bins": stats.get("bins", {}),
        **checks,
    }


# --------------------------------------------------------------------------- the two parts


SHALLOW = {"burst": RPM // 6, "token_burst": TPM // 6}
"""Simulator buckets holding 10 seconds' worth (the default holds a minute's)."""

VARIANTS: dict[str, dict[str, Any]] = {
    "no limits (compute floor)": {"extra": "", "limited": False},
    "fixed 4, adaptive=false": {"extra": "concurrency = 4\nadaptive = false\n", "limited": True},
    "fixed 16, adaptive=false": {"extra": "concurrency = 16\nadaptive = false\n", "limited": True},
    "fixed 64, adaptive=false": {"extra": "concurrency = 64\nadaptive = false\n", "limited": True},
    "adaptive (default)": {"extra": "", "limited": True},
    # investigation, not run by default (--configs shallow,headerless)
    "shallow buckets: adaptive (default)": {"extra": "", "limited": True, "sim": SHALLOW},
    "headerless (google), shallow buckets: adaptive, rpm/tpm given": {
        "extra": f"rpm = {RPM}\ntpm = {TPM}\n",
        "limited": True,
        "sim": SHALLOW,
        "backend": "google",
    },
}
"""The rate-limit part's configurations: backend options, simulator limits (and overrides)."""
DEFAULT_CONFIGS = list(VARIANTS)[:5]


def bench_limits(
    tmp: Path, labels: int, limit: int | None, configs: list[str], timeout: float | None = None
) -> list[dict[str, Any]]:
    """The rate-limit part: one fresh simulator and one harness run per configuration."""
    from pptarena.plugins.datasets.demo.dataset import DemoDataset  # noqa: F401 - fail early

    out = []
    for name in configs:
        variant = VARIANTS[name]
        spec: dict[str, Any] = {"faults": FAULTS, "seed": SEED, "latency": LATENCY, "record_requests": False}
        if variant["limited"]:
            spec.update(rpm=RPM, tpm=TPM, **variant.get("sim", {}))
        print(f"- {name}: running ...", flush=True)
        with SimProcess(**spec) as sim:
            body = limits_config(sim.url, labels, variant["extra"], limit, variant.get("backend", "openai"))
            data = run_config(tmp, _slug(name), body, timeout or CONFIG_TIMEOUT)
            stats = sim.stats()
        tasks = sorted({r["task_id"] for r in data["rows"]}) or []
        n_tasks = limit or 12
        if len(tasks) < n_tasks:  # rows lost: the task list comes from the dataset, not from the rows
            tasks = _demo_task_ids()[:n_tasks]
        expected = {(f"hybrid-{i:02d}", t, 1) for i in range(1, labels + 1) for t in tasks}
        bursts = (spec.get("burst") or RPM, spec.get("token_burst") or TPM)
        line = limits_summary(name, data, stats, expected, bursts)
        if not variant["limited"]:
            line["ratio"] = line["ratio_strict"] = None
        out.append(line)
        print(
            f"  wall {line['wall_s']} s, {line['requests']} requests, {line['status_429']} x 429 "
            f"({100 * line['share_429']:.1f} %), bound {line['limit_bound_s']} s ({line['binds']}), "
            f"scored {line['scored']}/{line['rows']}, lost {line['lost']}, dup {line['duplicated']}",
            flush=True,
        )
    return out


def _slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in name).split())


def _demo_task_ids() -> list[str]:
    from pptarena.plugins.datasets.demo.dataset import DemoDataset
    from pptarena.types import ComponentContext

    cache = Path(tempfile.mkdtemp(prefix="provider-bench-demo-"))
    ctx = ComponentContext(cache_dir=cache, model=None)  # type: ignore[arg-type]
    try:
        return [t.id for t in DemoDataset(DemoDataset.Options(), ctx).load()]
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def judge_input_cost(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The dual judge's input tokens and input cost over ``rows`` (reads and writes at their rates),
    and the same from the rows' cost fields (total judge cost less output tokens at the output rate)."""
    from pptarena.models.pricing import bundled_prices

    price = bundled_prices()[JUDGE_MODEL]
    tokens = cached = written = written_1h = out_tokens = 0
    total_usd = 0.0
    for r in rows:
        u = r.get("usage") or {}
        tokens += int(u.get("judge_input_tokens") or 0)
        cached += int(u.get("judge_cached_input_tokens") or 0)
        written += int(u.get("judge_cache_write_input_tokens") or 0)
        written_1h += int(u.get("judge_cache_write_1h_input_tokens") or 0)
        out_tokens += int(u.get("judge_output_tokens") or 0)
        judge_cost = ((r.get("cost") or {}).get("judges") or {}).get("dual") or {}
        total_usd += float(judge_cost.get("known_usd") or judge_cost.get("usd") or 0.0)
    return {
        "input_tokens": tokens,
        "cache_read_tokens": cached,
        "cache_write_tokens": written + written_1h,
        "input_usd": price.cost(tokens, 0, cached, written, written_1h),
        "input_usd_from_cost_fields": total_usd - out_tokens * price.output / 1e6,
        "judge_calls": sum(int((r.get("usage") or {}).get("judge_calls") or 0) for r in rows),
    }


def bench_caching(
    tmp: Path, limit: int | None, sets: list[str], image_tokens: list[int]
) -> list[dict[str, Any]]:
    """The caching part: each agent set x image-token figure judged with simulator caching on, then off."""
    out = []
    for agents in sets:
        for tokens in image_tokens:
            runs: dict[str, Any] = {}
            for name, caching in (("on", True), ("off", False)):
                print(f"- {agents}, {tokens} tokens per image, caching {name}: running ...", flush=True)
                spec = {"seed": SEED, "caching": caching, "image_tokens": tokens, "record_requests": False}
                with SimProcess(**spec) as sim:
                    slug = _slug(f"caching {agents} {tokens} {name}")
                    data = run_config(
                        tmp, slug, caching_config(sim.url, CACHING_AGENTS[agents], limit), CONFIG_TIMEOUT
                    )
                    stats = sim.stats()
                rows = data["rows"]
                runs[name] = {
                    "wall_s": round(float(data["wall_s"]), 1),
                    "rows": len(rows),
                    "scored": sum(r["status"] == "scored" for r in rows),
                    "sim_cached_tokens": stats["cached_tokens"],
                    "sim_cache_write_tokens": stats["cache_write_tokens"],
                    "verdicts": {
                        f"{r['agent']}/{r['task_id']}": (r.get("scores") or {}).get("dual", {}).get("score")
                        for r in rows
                    },
                    **judge_input_cost(rows),
                }
            on, off = runs["on"], runs["off"]
            saving = 1.0 - on["input_usd"] / off["input_usd"] if off["input_usd"] else 0.0
            same = on["verdicts"] == off["verdicts"] and len(on["verdicts"]) > 0
            out.append(
                {
                    "agents": agents,
                    "image_tokens": tokens,
                    "runs": runs,
                    "saving": round(saving, 4),
                    "identical_verdicts": same,
                }
            )
            print(f"  input cost saved {100 * saving:.1f} %, verdicts identical: {same}", flush=True)
    return out


# --------------------------------------------------------------------------- printing


def print_limits(rows: list[dict[str, Any]]) -> None:
    head = (
        "| configuration | wall s | gen. requests | 429 (share) | limit-bound s (binds) | wall / bound "
        "| wall / bound less burst | scored / not | lost / dup | unscored name provider |"
    )
    print("\n" + head)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        bound = f"{r['limit_bound_s']} ({r['binds']})" if r["ratio"] is not None else "–"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "–"
        strict = f"{r['ratio_strict']:.2f} ({r['strict_bound_s']})" if r["ratio_strict"] is not None else "–"
        named = f"{r['unscored_name_provider']}/{r['not_scored']}"
        print(
            f"| {r['config']}{' (timed out)' if r['timed_out'] else ''} | {r['wall_s']} | {r['requests']} "
            f"| {r['status_429']} ({100 * r['share_429']:.1f} %) | {bound} | {ratio} | {strict} "
            f"| {r['scored']} / {r['not_scored']} | {r['lost']} / {r['duplicated']} | {named} |"
        )
    print()
    for r in rows:
        print(
            f"{r['config']}: admitted {r['admitted']} requests, {r['admitted_tokens']} tokens "
            f"({r['admitted_tokens'] / max(r['wall_s'], 1e-9) * 60:.0f} per minute of wall time) "
            f"(requests bound {r['requests_bound_s']} s, tokens bound {r['tokens_bound_s']} s, slowest chain "
            f"{r['slowest_chain_s']} s); faults {r['faults']}; max in flight at the simulator "
            f"{r['max_in_flight_at_sim']}; limiter {json.dumps(r['limiters'])}"
        )
        for err in sorted(Counter(e[:160] for e in r["unscored_errors"]).items()):
            print(f"    unscored x{err[1]}: {err[0]}")


def print_caching(results: list[dict[str, Any]]) -> None:
    print(
        "\n| agents | tokens per image | judge calls | input tokens | cache read / write (on) "
        "| input USD on | input USD off | saved | same verdicts |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for res in results:
        on, off = res["runs"]["on"], res["runs"]["off"]
        print(
            f"| {res['agents']} | {res['image_tokens']} | {on['judge_calls']} | {on['input_tokens']} "
            f"| {on['cache_read_tokens']} / {on['cache_write_tokens']} | {on['input_usd']:.4f} "
            f"| {off['input_usd']:.4f} | {100 * res['saving']:.1f} % | {res['identical_verdicts']} |"
        )
    for res in results:
        for name, r in res["runs"].items():
            print(
                f"{res['agents']}, {res['image_tokens']} tokens/image, caching {name}: "
                f"{r['scored']}/{r['rows']} scored, wall {r['wall_s']} s, input USD from the cost fields "
                f"{r['input_usd_from_cost_fields']:.4f}, simulator cache read/write (all calls) "
                f"{r['sim_cached_tokens']}/{r['sim_cache_write_tokens']}"
            )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--_sim":
        serve_sim(json.loads(sys.argv[2]))
        return
    if len(sys.argv) > 4 and sys.argv[1] == "--_run":
        child_run(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke check (< 2 min): 6 tasks, 1 label, 2 configs")
    ap.add_argument("--labels", type=int, default=4, help="hybrid-agent labels in the rate-limit part")
    ap.add_argument("--only", choices=["limits", "caching"], default=None)
    ap.add_argument(
        "--configs",
        default=None,
        help="comma list of rate-limit configurations by prefix: no, fixed, adaptive (the default five) "
        "and the investigation's shallow, headerless",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds one configuration may take (default {CONFIG_TIMEOUT:.0f}; 300 pairs need about 2000)",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the run folders")
    args = ap.parse_args()
    configs = DEFAULT_CONFIGS
    limit = None
    labels = args.labels
    sets, image_tokens = list(CACHING_AGENTS), list(IMAGE_TOKENS)
    if args.quick:
        configs, limit, labels = ["fixed 16, adaptive=false", "adaptive (default)"], 6, 1
        sets, image_tokens = sets[:1], image_tokens[:1]
    if args.configs:
        wanted = [w.strip() for w in args.configs.split(",")]
        configs = [c for c in VARIANTS if any(c.startswith(w) for w in wanted)]
    tmp = Path(tempfile.mkdtemp(prefix="provider-bench-"))
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {os.getloadavg()}; folder {tmp}",
        flush=True,
    )
    result: dict[str, Any] = {"labels": labels, "limit": limit, "rpm": RPM, "tpm": TPM, "faults": FAULTS}
    t0 = time.perf_counter()
    try:
        if args.only in (None, "limits"):
            print(
                f"rate limits: {labels} hybrid label(s) x {limit or 12} demo tasks, jobs 4, simulator "
                f"{RPM} RPM / {TPM} TPM, {int(FAULTS * 100)} % faults, latency {LATENCY}",
                flush=True,
            )
            result["limits"] = bench_limits(tmp, labels, limit, configs, args.timeout)
            print_limits(result["limits"])
        if args.only in (None, "caching"):
            print(f"\ncaching: 3 agents x {limit or 12} demo tasks, dual judge on anthropic", flush=True)
            result["caching"] = bench_caching(tmp, limit, sets, image_tokens)
            print_caching(result["caching"])
    finally:
        print(f"\ntotal {time.perf_counter() - t0:.0f} s; load average at end {os.getloadavg()}")
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
