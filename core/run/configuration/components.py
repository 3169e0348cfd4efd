"""Building components from a validated config: contexts, backends and model clients."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pptarena.models import ModelClient, ModelHub, UsageBook
from pptarena.run.configuration.config import ComponentConfig, RunConfig, default_cache_dir
from pptarena.run.configuration.registry import Registry
from pptarena.types import AgentLog, ComponentContext, Renderer


class Components:
    """Builds the components of one run (in one process) and shares model backends between them."""

    def __init__(self, config: RunConfig, registry: Registry):
        self.config = config
        self.registry = registry
        self.cache_dir = (
            Path(config.run.cache_dir).expanduser() if config.run.cache_dir else default_cache_dir()
        )
        self._backends: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._renderer: Renderer | None = None
        self.hub = ModelHub(self.backend)
        """Hands out model clients of this run's backends (built on first use)."""
        self.batch_queue: Any = None
        """The run's :class:`~pptarena.run.batches.BatchQueue` in batch mode (judge calls and batched
        agents' calls go through it; in an agent worker process, the proxy to the host's)."""
        self._unbatched: set[tuple[str, str]] = set()  # (backend, who) told they go out directly

    def context(
        self, comp: ComponentConfig | None = None, model: Callable[[str], ModelClient] | None = None
    ) -> ComponentContext:
        """A context for a component (``model`` defaults to :meth:`model_client`)."""
        return ComponentContext(
            cache_dir=self.cache_dir,
            model=model or self.model_client,
            renderer=self._renderer if comp is None or comp.kind != "renderers" else None,
            name=comp.use if comp else "",
            label=comp.label if comp else "",
        )

    def backend(self, name: str) -> Any:
        """The backend instance for a configured or registered backend name (built once)."""
        with self._lock:
            if name not in self._backends:
                comp = self.config.backends.get(name)
                if comp is not None:
                    inst = comp.spec.factory(comp.options, self.context(comp))
                else:
                    spec = self.registry.get("backends", name)
                    opts = spec.options_model.model_validate({})
                    inst = spec.factory(
                        opts,
                        ComponentContext(
                            cache_dir=self.cache_dir, model=self.model_client, name=name, label=name
                        ),
                    )
                self._backends[name] = inst
            return self._backends[name]

    def model_client(
        self, ref: str, log: AgentLog | None = None, book: UsageBook | None = None
    ) -> ModelClient:
        """A fresh :class:`ModelClient` for ``"<backend>/<model>"`` (usage counted per client).

        With ``log``, every call is recorded there as a ``model_call`` event; with ``book``,
        its usage is also added there.
        """
        return self.hub.client(ref, book=book, log=log)

    def judge_client(
        self, ref: str, log: AgentLog | None = None, book: UsageBook | None = None
    ) -> ModelClient:
        """A client for a judge's calls: through the run's batch queue in batch mode when the backend
        can batch (:mod:`pptarena.run.batches`), else as :meth:`model_client`."""
        return self.batch_client(ref, log=log, book=book)

    def batch_client(
        self,
        ref: str,
        log: AgentLog | None = None,
        book: UsageBook | None = None,
        *,
        wait: Any = None,
        who: str = "judge",
    ) -> ModelClient:
        """A client whose calls go through the run's batch queue when there is one and the backend
        can batch, else as :meth:`model_client`. ``wait``: the agent pair whose calls these are
        (:class:`~pptarena.run.batches.BatchWait`); ``who`` names the callers in the one line said
        when a backend cannot batch."""
        queue = self.batch_queue
        if queue is not None:
            from pptarena.models.batch import supports_batch
            from pptarena.models.messages import split_model_ref

            name, model = split_model_ref(ref)
            backend = self.hub.backend(name)
            if supports_batch(backend):
                from pptarena.run.batches import BatchingModelClient

                return BatchingModelClient(queue, backend, name, model, book=book, log=log, wait=wait)
            with self._lock:
                if (name, who) not in self._unbatched:
                    self._unbatched.add((name, who))
                    queue.say(
                        f"Batch mode: backend {name!r} has no batch API; its {who} calls go out directly."
                    )
        return self.model_client(ref, log=log, book=book)

    def agent_models(
        self, agent: ComponentConfig, book: UsageBook | None = None, log: AgentLog | None = None
    ) -> Callable[[str], ModelClient]:
        """The ``ref -> ModelClient`` factory an agent's calls use: through the batch queue when the
        run has one and batches this agent (:mod:`pptarena.run.configuration.batching`; the pair's
        :data:`~pptarena.run.batches.current_wait` is told of each wait), else the run's clients."""
        from pptarena.run.configuration.batching import batches_agent

        if self.batch_queue is None or not batches_agent(agent, True):
            return self.hub.factory(book=book, log=log)
        from pptarena.run.batches import current_wait

        wait = current_wait.get()
        who = f"agent {agent.label!r}"
        return lambda ref: self.batch_client(ref, log=log, book=book, wait=wait, who=who)

    def build(self, comp: ComponentConfig, model: Callable[[str], ModelClient] | None = None) -> Any:
        """Instantiate one component."""
        return comp.spec.factory(comp.options, self.context(comp, model))

    def renderer(self) -> Renderer:
        """The run's renderer (built once)."""
        with self._lock:
            if self._renderer is None:
                self._renderer = self.config.renderer.spec.factory(
                    self.config.renderer.options, self.context(self.config.renderer)
                )
            return self._renderer

    def lazy_renderer(self) -> LazyRenderer:
        """The run's renderer for an agent's workspace, built only if the agent renders something."""
        return LazyRenderer(self)

    def close(self) -> None:
        """Stop the batch queue and release helper processes held by the renderer and backends."""
        if self.batch_queue is not None:
            self.batch_queue.close()
            self.batch_queue = None
        for obj in [self._renderer, *self._backends.values()]:
            close = getattr(obj, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing must not mask the run's outcome
                    pass


class LazyRenderer:
    """Stands for the run's renderer and builds it (through :class:`Components`) on first use."""

    def __init__(self, components: Components):
        self._components = components

    def render(self, deck_path: Path, out_dir: Path) -> Any:
        """Render through the run's renderer (see :class:`pptarena.types.Renderer`)."""
        return self._components.renderer().render(deck_path, out_dir)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._components.renderer(), name)
