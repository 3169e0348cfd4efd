"""Test-only plugins for tests/security/test_trust_claims.py (registered with PPTARENA_PLUGINS).

Agents written the documented way that lie to the harness (issue 31 items 4 and 5): they report
usage they did not spend, blame their own failure on the infrastructure, call a model only their
plugin's default names, or fill the render cache. Plus a judge whose model the run names and a
renderer that caches its renders as the LibreOffice renderer does (``cache``, ``cache_dir``,
default ``<cache_dir>/renders``).

This module is self-contained (it imports only pptarena, Pillow and python-pptx): a jailed worker
sees this one file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from PIL import Image
from pptx import Presentation
from pydantic import Field

import pptarena
from pptarena import Message, ModelRef
from pptarena.render import RenderCache, cached_render
from pptarena.types import Component, InfraError, Options, Prediction, SlideImage, Verdict

JUDGE_MODEL = "scripted/judge-1"
"""The model the run's judge uses in the tests."""

FORGED_USAGE = {
    "input_tokens": -10_000_000,
    "output_tokens": 10**12,
    "calls": "many",
    "cached_input_tokens": 2.5,
    "reasoning_tokens": 7,
}
"""What the usage liar reports: one plausible count among a negative, an absurd, a text and a float."""


def _copy_input(workspace) -> Prediction:
    shutil.copyfile(workspace.input_deck, workspace.output_deck)
    return Prediction(path=workspace.output_deck)


class UsageLiar(Component):
    """Calls its model once, then hands in its input with :data:`FORGED_USAGE` as its usage."""

    class Options(Options):
        model: ModelRef

    def edit(self, task, workspace):
        workspace.model(self.options.model).complete([Message.user(task.instruction)])
        pred = _copy_input(workspace)
        pred.usage = dict(FORGED_USAGE)
        return pred


class InfraExcuse(Component):
    """Fails on its own and raises :class:`pptarena.InfraError` to have it counted as the harness's
    (and re-run by ``--retry-errors``); with ``model``, calls it first (a scripted failure there is a
    real infrastructure failure the harness sees)."""

    class Options(Options):
        model: ModelRef | None = None

    def edit(self, task, workspace):
        if self.options.model:
            workspace.model(self.options.model).complete([Message.user(task.instruction)])
        raise InfraError("the renderer is down, honest (it is not: this agent failed)")


class DefaultModelCaller(Component):
    """Calls the model its Options *default* names (the judge's model): the config table names none."""

    class Options(Options):
        model: ModelRef = JUDGE_MODEL

    def edit(self, task, workspace):
        reply = workspace.model(self.options.model).complete([Message.user(task.instruction)])
        pred = _copy_input(workspace)
        pred.notes = f"answered: {reply.text}"
        return pred


class RenderFlooder(Component):
    """Renders ``count`` distinct one-slide decks through the bridge, then hands in its input."""

    class Options(Options):
        count: int = 50

    def edit(self, task, workspace):
        rendered = 0
        for i in range(self.options.count):
            deck = Path(workspace.dir) / "flood.pptx"
            prs = Presentation()
            prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = f"flood {i}"
            prs.save(str(deck))
            rendered += len(workspace.renderer.render(deck, Path(workspace.dir) / "flood-out"))
        workspace.log.write("flood", rendered=rendered)
        return _copy_input(workspace)


class ModelJudge(Component):
    """Asks its model once per prediction and scores 1.0 (a judge whose model the run names)."""

    class Options(Options):
        model: ModelRef = JUDGE_MODEL

    def judge(self, task, prediction, evidence):
        evidence.model(self.options.model).complete([Message.user("grade it")])
        return Verdict(score=1.0)


class CachingBoxes(Component):
    """Draws one large noisy PNG per slide and caches renders like the LibreOffice renderer:
    ``cache_dir`` (default ``<cache_dir>/renders``) through :func:`pptarena.render.cached_render`."""

    class Options(Options):
        cache: bool = True
        cache_dir: Path | None = None
        size: int = Field(256, ge=16, le=2048)

    def __init__(self, options, context):
        super().__init__(options, context)
        root = options.cache_dir or Path(context.cache_dir) / "renders"
        self.cache = RenderCache(Path(root)) if options.cache else None

    def render(self, deck_path, out_dir):
        return cached_render(
            Path(deck_path),
            Path(out_dir),
            renderer="caching-boxes",
            settings={"size": self.options.size},
            cache=self.cache,
            produce=self._produce,
        )

    def _produce(self, deck_path, out_dir):
        import os

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        images = []
        side = self.options.size
        for i, _ in enumerate(Presentation(str(deck_path)).slides, 1):
            path = out / f"slide-{i:03d}.png"
            Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(path)
            images.append(SlideImage(number=i, sld_id=None, path=path, width=side, height=side))
        return images


@pptarena.hookimpl
def register_agents(register):
    register("usage-liar", UsageLiar)
    register("infra-excuse", InfraExcuse)
    register("default-model-caller", DefaultModelCaller)
    register("render-flooder", RenderFlooder)


@pptarena.hookimpl
def register_judges(register):
    register("model-judge", ModelJudge)


@pptarena.hookimpl
def register_renderers(register):
    register("caching-boxes", CachingBoxes)
