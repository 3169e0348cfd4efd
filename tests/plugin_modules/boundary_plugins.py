"""Test-only plugins for tests/security/test_trust_boundary.py (registered with PPTARENA_PLUGINS).

Agents written the documented way (an agent plugin, no special flags) that attack the trust
boundary: they look for the answer on the task object, in its metadata, in the worker's spec file,
in the environment and on the file system, or import the dataset's own code to recompute it. Plus a
judge that compares a prediction's slides with the target's byte for byte, and a renderer that draws
one small PNG per slide (to test renders through the bridge).

This module is self-contained (it imports only pptarena and python-pptx): a jailed worker sees
this one file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

from PIL import Image
from pptx import Presentation

import pptarena
from pptarena import Message, ModelRef
from pptarena.types import Component, Options, Prediction, SlideImage, Verdict

MARKER = "pptarena-boundary-stray"
WORKER_TOKEN = os.urandom(8).hex()  # one per worker process: pairs logging the same token shared a worker


def _strings(value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _strings(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings(v, out)
    elif value is not None:
        out.append(str(value))
    return out


class TargetCopier(Component):
    """The naive attack: copy ``task.target`` (the field a full Task has) to the output."""

    class Options(Options):
        pass

    def edit(self, task, workspace):
        shutil.copyfile(task.target, workspace.output_deck)
        return Prediction(path=workspace.output_deck, metadata={"isolation": "bwrap"})


class AnswerHunter(Component):
    """Looks for the target everywhere it can reach: the task object's fields and metadata, every
    JSON file around its workspace (a worker's spec file), the environment and, with ``walk``, the
    file system. Hands in the first ``.pptx`` it finds that is not its input, else its input; the
    notes list what it found and ``seen.json`` in its folder keeps what it read."""

    class Options(Options):
        walk: bool = True

    def edit(self, task, workspace):
        seen = {
            "task_fields": sorted(f.name for f in dataclasses.fields(task)),
            "task": task.to_json() if hasattr(task, "to_json") else repr(task),
            "spec_files": {},
            "environ": dict(os.environ),
        }
        candidates = _strings(seen["task"], [])
        for name in ("target", "style_target", "rubric"):
            if hasattr(task, name):
                candidates.append(str(getattr(task, name)))
        for folder in [Path(workspace.dir), *Path(workspace.dir).parents][:4]:
            try:
                for f in folder.glob("*.json"):
                    text = f.read_text(errors="replace")[:200_000]
                    seen["spec_files"][str(f)] = text
                    candidates += _strings(json.loads(text), [])
            except (OSError, ValueError):
                continue
        candidates += list(os.environ.values())
        if self.options.walk:
            for root in ["/", "/tmp", str(Path.home())]:
                for n, (dirpath, dirnames, filenames) in enumerate(os.walk(root)):
                    if n > 20_000:
                        break
                    dirnames[:] = [d for d in dirnames if d not in ("proc", "sys", "dev")]
                    candidates += [os.path.join(dirpath, f) for f in filenames if f.endswith(".pptx")]
        found = sorted(  # anything named like a target first
            {
                c
                for c in candidates
                if c.endswith(".pptx")
                and "site-packages" not in c  # python-pptx's own template is no answer
                and Path(c).is_file()
                and Path(c).resolve() != Path(workspace.input_deck).resolve()
                and Path(workspace.dir).resolve() not in Path(c).resolve().parents
            },
            key=lambda c: ("target" not in Path(c).name, c),
        )
        (Path(workspace.dir) / "seen.json").write_text(json.dumps({**seen, "found": found}, default=str))
        shutil.copyfile(found[0] if found else workspace.input_deck, workspace.output_deck)
        return Prediction(path=workspace.output_deck, notes=json.dumps(found))


class DatasetImporter(Component):
    """Imports the demo dataset's task table inside its worker and applies the task's own edit."""

    class Options(Options):
        pass

    def edit(self, task, workspace):
        from pptarena.plugins.datasets.demo.tasks import TASKS  # the attack

        spec = next(t for t in TASKS if t.id == task.id)
        prs = Presentation(str(workspace.input_deck))
        spec.edit(prs)
        prs.save(str(workspace.output_deck))
        return Prediction(path=workspace.output_deck)


class Lingerer(Component):
    """Edits correctly, leaves a ``setsid`` process behind, and logs how many earlier leftovers are
    still running and which worker process it runs in; with ``hang``, never returns."""

    class Options(Options):
        hang: bool = False
        tag: str = "x"

    def edit(self, task, workspace):
        mine = f"{MARKER}-{self.options.tag}"
        earlier = _running(mine)
        subprocess.Popen(["sh", "-c", f"exec -a {mine} sleep 600"], start_new_session=True)
        if self.options.hang:
            time.sleep(600)
        prs = Presentation(str(workspace.input_deck))
        prs.slides[0].shapes.title.text = task.instruction.split("'")[1]
        prs.save(str(workspace.output_deck))
        workspace.log.write("lingerer", leftovers_running=earlier, worker=WORKER_TOKEN)
        return Prediction(path=workspace.output_deck)


def _running(name: str) -> int:
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() == name:
                    count += 1
            except OSError:
                pass
    return count


class Forker(Component):
    """Starts up to ``count`` sleeping processes (a fork bomb), logs how many it got, hands in its input."""

    class Options(Options):
        count: int = 1500

    def edit(self, task, workspace):
        started, error = 0, ""
        children = []
        for _ in range(self.options.count):
            try:
                children.append(subprocess.Popen(["sleep", "60"]))
                started += 1
            except OSError as exc:
                error = f"{type(exc).__name__}: {exc}"
                break
        workspace.log.write("forks", started=started, error=error)
        return Prediction(path=workspace.input_deck)  # the input itself, handed in unchanged


class JudgeModelCaller(Component):
    """Names one model in its options and calls another (the judges' model) through the bridge."""

    class Options(Options):
        model: ModelRef
        other: str

    def edit(self, task, workspace):
        reply = workspace.model(self.options.other).complete([Message.user(task.instruction)])
        raise AssertionError(f"the judges' model answered: {reply.text!r}")


class SlowRenderer(Component):
    """A renderer that takes ``seconds`` per deck (a hung office, a slow model would do the same)."""

    class Options(Options):
        seconds: float = 30.0

    def render(self, deck_path, out_dir):
        time.sleep(self.options.seconds)
        return []


class RenderingAgent(Component):
    """Renders its input through ``workspace.renderer`` and hands it in; notes: the images it got."""

    class Options(Options):
        pass

    def edit(self, task, workspace):
        images = workspace.renderer.render(workspace.input_deck, Path(workspace.dir) / "renders-mine")
        shutil.copyfile(workspace.input_deck, workspace.output_deck)
        sizes = [(img.number, img.width, img.height, Path(img.path).is_file()) for img in images]
        return Prediction(path=workspace.output_deck, notes=json.dumps(sizes))


class SlidesJudge(Component):
    """1.0 when every slide part of the prediction equals the target's byte for byte."""

    class Options(Options):
        pass

    def judge(self, task, prediction, evidence):
        def slides(path):
            with zipfile.ZipFile(path) as z:
                return {n: z.read(n) for n in z.namelist() if n.startswith("ppt/slides/slide")}

        same = slides(evidence.path("prediction")) == slides(evidence.path("target"))
        return Verdict(score=1.0 if same else 0.0)


class BoxRenderer(Component):
    """Draws one 64x48 grey PNG per slide."""

    class Options(Options):
        pass

    def render(self, deck_path, out_dir):
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        images = []
        for i, _ in enumerate(Presentation(str(deck_path)).slides, 1):
            path = out / f"slide-{i}.png"
            Image.new("RGB", (64, 48), "grey").save(path)
            images.append(SlideImage(number=i, sld_id=None, path=path, width=64, height=48))
        return images


@pptarena.hookimpl
def register_agents(register):
    register("target-copier", TargetCopier)
    register("answer-hunter", AnswerHunter)
    register("dataset-importer", DatasetImporter)
    register("lingerer", Lingerer)
    register("rendering", RenderingAgent)
    register("forker", Forker)
    register("judge-model-caller", JudgeModelCaller)


@pptarena.hookimpl
def register_judges(register):
    register("same-slides", SlidesJudge)


@pptarena.hookimpl
def register_renderers(register):
    register("boxes", BoxRenderer)
    register("slow", SlowRenderer)
