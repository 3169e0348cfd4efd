"""A simulated model provider on loopback (see :mod:`pptarena.models.sim.server`).

It speaks the OpenAI, Anthropic and Gemini wire formats closely enough for the official SDKs,
with rate limits and their headers, injected faults, prompt-cache usage and batch jobs::

    from pptarena.models.sim import ProviderSim, SimConfig, Rule

    with ProviderSim(SimConfig(rpm=60, burst=2, faults=0.05, seed=1)) as sim:
        client = openai.OpenAI(base_url=sim.url + "/v1", api_key="sk-test")
        ...
        sim.stats()["by_status"]

The guide is ``docs/provider-sim.md``.
"""

from pptarena.models.sim.config import FAULT_KINDS, Rule, SimConfig, SimConfigError, load_rules
from pptarena.models.sim.server import ProviderSim
from pptarena.models.sim.stats import SimRequest

__all__ = ["FAULT_KINDS", "ProviderSim", "Rule", "SimConfig", "SimConfigError", "SimRequest", "load_rules"]
