"""``arena provider-sim``: serve the simulated model provider (:mod:`pptarena.models.sim`) on loopback."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click


def _csv(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = tuple(x.strip() for x in value.split(",") if x.strip())
    return names or None


@click.command("provider-sim")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port on 127.0.0.1 (0: a free one).",
)
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), help="Requests per minute per API key.")
@click.option("--tpm", type=click.FloatRange(min=0, min_open=True), help="Tokens per minute per API key.")
@click.option(
    "--burst",
    type=click.FloatRange(min=0, min_open=True),
    help="Capacity of the request bucket (default: the rpm).",
)
@click.option(
    "--token-burst",
    type=click.FloatRange(min=0, min_open=True),
    help="Capacity of the token bucket (default: the tpm).",
)
@click.option("--limit-by-model", is_flag=True, help="Separate limits per API key and model.")
@click.option(
    "--faults", type=click.FloatRange(0, 1), default=0.0, show_default=True, help="Share of requests failing."
)
@click.option(
    "--fault-mix",
    help="Weights of the fault kinds, e.g. '500=1,529=1,reset=1' "
    "(kinds: 500 502 503 529 reset timeout truncated malformed bad_tool_args; default: all, equal).",
)
@click.option(
    "--hang",
    "hang_seconds",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds a 'timeout' fault hangs.",
)
@click.option(
    "--latency",
    default="fixed:0",
    show_default=True,
    help="fixed:S, uniform:A,B or lognormal:MEDIAN,SIGMA (seconds).",
)
@click.option(
    "--latency-per-token", type=click.FloatRange(min=0), default=0.0, help="Extra seconds per output token."
)
@click.option(
    "--rules",
    "rules_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TOML file of [[rules]] (match, reply, model, tool_call).",
)
@click.option(
    "--batch-delay",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds until a batch ends.",
)
@click.option(
    "--batch-fail", type=click.FloatRange(0, 1), default=0.0, help="Share of batch requests that fail."
)
@click.option(
    "--batch-expire", type=click.FloatRange(0, 1), default=0.0, help="Probability a whole batch expires."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every random draw.")
@click.option("--models", help="Comma-separated model names that exist (default: any name).")
@click.option(
    "--refuse-key", "refused_keys", multiple=True, help="An API key answered with 401 (repeatable)."
)
@click.option(
    "--anthropic-cache-min",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="Anthropic's minimum cacheable prompt length (tokens).",
)
@click.option("--no-caching", is_flag=True, help="Never report prompt-cache hits or writes.")
@click.option(
    "--duration",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop after this many seconds (default: serve until Ctrl-C).",
)
def provider_sim_command(
    port: int,
    rpm: float | None,
    tpm: float | None,
    burst: float | None,
    token_burst: float | None,
    limit_by_model: bool,
    faults: float,
    fault_mix: str | None,
    hang_seconds: float,
    latency: str,
    latency_per_token: float,
    rules_file: Path | None,
    batch_delay: float,
    batch_fail: float,
    batch_expire: float,
    seed: int,
    models: str | None,
    refused_keys: tuple[str, ...],
    anthropic_cache_min: int,
    no_caching: bool,
    duration: float | None,
) -> None:
    """Serve a simulated OpenAI / Anthropic / Gemini provider on 127.0.0.1 for tests.

    Rate limits with the providers' headers, injected faults, latency, prompt-cache usage and
    batch jobs; the official SDKs work against it unchanged. Prints the three base URLs and
    serves until Ctrl-C, then prints a one-line summary of what it saw. See docs/provider-sim.md.
    """
    from pptarena.models.sim import ProviderSim, SimConfig, SimConfigError, load_rules
    from pptarena.models.sim.stats import summary_line

    try:
        config = SimConfig(
            rpm=rpm,
            tpm=tpm,
            burst=burst,
            token_burst=token_burst,
            limit_by_model=limit_by_model,
            latency=latency,
            latency_per_token=latency_per_token,
            faults=faults,
            fault_mix=fault_mix,
            hang_seconds=hang_seconds,
            batch_delay=batch_delay,
            batch_fail=batch_fail,
            batch_expire=batch_expire,
            rules=load_rules(rules_file) if rules_file else (),
            seed=seed,
            models=_csv(models),
            refused_keys=refused_keys,
            anthropic_cache_min=anthropic_cache_min,
            caching=not no_caching,
        )
        sim = ProviderSim(config, port=port)
    except SimConfigError as exc:
        raise click.BadParameter(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from exc
    stop = threading.Event()
    previous = (
        signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    )
    if previous is not None:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sim.start()
    try:
        click.echo(f"OpenAI     base_url: {sim.openai_base_url}")
        click.echo(f"Anthropic  base_url: {sim.anthropic_base_url}")
        click.echo(f"Gemini     base_url: {sim.gemini_base_url}  (google-genai HttpOptions(base_url=...))")
        click.echo("Stats: GET /sim/stats. Ctrl-C stops.", nl=True)
        try:
            stop.wait(duration)
        except KeyboardInterrupt:
            pass
    finally:
        sim.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    click.echo(summary_line(sim.stats()))
