"""A simulated model provider on loopback (see :mod:`pptarena.models.sim.server`)."""
