"""Test-only plugins for the core tests (registered with PPTARENA_PLUGINS=fakeplugins).

A dataset of generated decks, agents that edit, sleep, crash or hang in a
subprocess, and judges that compare slide titles or fail in each way.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

from pptx import Presentation

import pptarena
from pptarena import Message, ModelRef
from pptarena.types import Component, InfraError, Options, Prediction, Task, Verdict


def make_deck(path: Path, title: str) -> Path:
    """A one-slide deck whose title is ``title``."""
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = title
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(path))
    return path


def deck_title(path: Path) -> str:
    """The first slide's title text."""
    return Presentation(str(path)).slides[0].shapes.title.text


class FakeDataset(Component):
    """``count`` tasks: change the title 'Old N' to 'New N'."""

    class Options(Options):
        root: Path
        count: int = 4
        turns: int = 0  # > 0: each task is a session of this many turns, all with the same target

    def tasks(self):
        root = self.options.root
        for i in range(self.options.count):
            orig = root / f"t{i}" / "original.pptx"
            target = root / f"t{i}" / "target.pptx"
            if not orig.exists():
                make_deck(orig, f"Old {i}")
                make_deck(target, f"New {i}")
            yield Task(
                id=f"task-{i:02d}",
                instruction=f"Change the title to 'New {i}'",
                original=orig,
                target=target,
                metadata={
                    "category": ["content"],
                    "difficulty": "easy" if i % 2 else "hard",
                    **self._turns(target, i),
                },
            )

    def _turns(self, target, i):
        turns = [
            {"instruction": f"Turn {n}: change the title to 'New {i}'", "target": str(target)}
            for n in range(self.options.turns)
        ]
        return {"turns": turns} if turns else {}


class RetitleAgent(Component):
    """Writes the right title, optionally after sleeping (runs in a worker process)."""

    class Options(Options):
        sleep: float = 0.0

    def edit(self, task, workspace):
        time.sleep(self.options.sleep)
        prs = Presentation(str(workspace.input_deck))
        prs.slides[0].shapes.title.text = task.instruction.split("'")[1]
        prs.save(str(workspace.output_deck))
        workspace.log.write("edit", pid=os.getpid())
        return Prediction(path=workspace.output_deck)


class AskerAgent(Component):
    """Asks a model for the new title (tests usage accounting and model-call logging)."""

    class Options(Options):
        model: ModelRef

    def edit(self, task, workspace):
        reply = workspace.model(self.options.model).complete([Message.user(task.instruction)]).text
        prs = Presentation(str(workspace.input_deck))
        prs.slides[0].shapes.title.text = reply.strip()
        prs.save(str(workspace.output_deck))
        return Prediction(path=workspace.output_deck)


class InProcessAsker(AskerAgent):
    """``asker`` in the runner's process (fast: no worker start)."""

    in_process = True


class HangAgent(Component):
    """Starts a grandchild process and hangs (to test timeouts and orphan cleanup)."""

    class Options(Options):
        pidfile: Path

    def edit(self, task, workspace):
        child = subprocess.Popen(["sleep", "300"])
        self.options.pidfile.write_text(str(child.pid))
        time.sleep(300)


class CrashAgent(Component):
    """Raises, or fails like a broken tool."""

    class Options(Options):
        infra: bool = False

    def edit(self, task, workspace):
        if self.options.infra:
            raise InfraError("the renderer exploded")
        raise RuntimeError("agent bug")


class ExitAgent(Component):
    """Kills its own worker process (to test that a crashed worker is replaced)."""

    class Options(Options):
        code: int = 3

    def edit(self, task, workspace):
        print("about to die", flush=True)
        os._exit(self.options.code)


class StrayAgent(RetitleAgent):
    """Edits correctly but leaves a background process running (to test that pairs never leak)."""

    class Options(Options):
        pidfile: Path

    def edit(self, task, workspace):
        child = subprocess.Popen(["sleep", "300"])
        self.options.pidfile.write_text(str(child.pid))
        prs = Presentation(str(workspace.input_deck))
        prs.slides[0].shapes.title.text = task.instruction.split("'")[1]
        prs.save(str(workspace.output_deck))
        workspace.log.write("edit", pid=os.getpid())
        return Prediction(path=workspace.output_deck)


class ForgerAgent(Component):
    """Hands the runner a forged, malformed outcome instead of a prediction: it writes one to the
    worker's result file and to every pipe it can write (a pool worker's reply pipe), then exits at
    once so the worker cannot write the real one."""

    FORGED = {"ok": True, "prediction": {"path": 7, "usage": "lots"}, "model_usage": []}

    def edit(self, task, workspace):
        line = (json.dumps(self.FORGED) + "\n").encode()
        (workspace.dir / ".worker-result.json").write_bytes(line)
        for entry in os.listdir("/proc/self/fd"):
            fd = int(entry)
            if fd <= 2:
                continue
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, line)
            except OSError:
                pass
        os._exit(0)


class DesktopAgent(RetitleAgent):
    """A GUI-marked agent: each of its pairs needs a node advertising the ``desktop`` resource."""

    resources = {"desktop": 1}


class InProcessCopy(Component):
    """Writes the right title (in process with ``trusted = true``), slowly: the SIGKILL resume test."""

    in_process = True

    class Options(Options):
        sleep: float = 0.0

    def edit(self, task, workspace):
        self.wait()
        prs = Presentation(str(workspace.input_deck))  # the right answer, worked out (agents get no target)
        prs.slides[0].shapes.title.text = task.instruction.split("'")[1]
        prs.save(str(workspace.output_deck))
        return Prediction(path=workspace.output_deck)

    def wait(self):
        time.sleep(self.options.sleep)


class SwallowingCopy(InProcessCopy):
    """Like ``slowcopy``, but its sleep sits in code that catches ``BaseException``, as some libraries do:
    a Ctrl-C pressed meanwhile never reaches the runner as an exception."""

    def wait(self):
        try:
            super().wait()
        except BaseException:  # noqa: BLE001 - the point of this agent
            pass


class LeakyCopy(InProcessCopy):
    """Writes the right title and ``PPTARENA_TEST_API_KEY``'s value into a transcript file."""

    def edit(self, task, workspace):
        (workspace.dir / "transcript.txt").write_text(f"key={os.environ.get('PPTARENA_TEST_API_KEY')}\n")
        return super().edit(task, workspace)


def encoded_leaks(secret: str) -> dict[str, str]:
    """Ways code copies a key out without writing it as is: base64 (plain and URL-safe, with 0-2
    bytes before the key so every alignment occurs), hex, percent-encoding."""
    import base64
    from urllib.parse import quote

    out = {}
    for pad in range(3):
        blob = ("k" * pad + "=" + secret + ";").encode()
        out[f"b64-{pad}"] = base64.b64encode(blob).decode()
        out[f"urlsafe-{pad}"] = base64.urlsafe_b64encode(blob).decode()
    out["hex"] = secret.encode().hex()
    out["HEX"] = secret.encode().hex().upper()
    out["percent"] = quote("key=" + secret, safe="")
    return out


class EncodingLeaker(InProcessCopy):
    """Writes ``PPTARENA_TEST_API_KEY`` in every :func:`encoded_leaks` form into a transcript and its
    prediction's notes."""

    def edit(self, task, workspace):
        leaks = encoded_leaks(os.environ["PPTARENA_TEST_API_KEY"])
        (workspace.dir / "transcript.txt").write_text("\n".join(f"{k}: {v}" for k, v in leaks.items()))
        pred = super().edit(task, workspace)
        return Prediction(path=pred.path, notes=" ".join(leaks.values()))


class NotingAgent(InProcessCopy):
    """Like ``slowcopy``, and says what it did in ``Prediction.notes`` (markup and a long tail included)."""

    def edit(self, task, workspace):
        pred = super().edit(task, workspace)
        return Prediction(path=pred.path, notes="Retitled slide 1; <b>kept</b> the subtitle. " + "x" * 5000)


class ResavingAgent(InProcessCopy):
    """Like ``slowcopy``; its class also defines ``normalize_reference``, which the harness must ignore
    (judge-side code handed the target deck: only a built-in registration names one). Tests that need
    the re-saving grant the spec :func:`resave_with_marker` as a built-in would register it."""

    @classmethod
    def normalize_reference(cls, src, dst):
        raise AssertionError("an agent class's normalize_reference was called by the harness")


def resave_with_marker(src, dst):
    """The "tool" of ``resaving``: re-saves a deck with a marker in the core properties."""
    if "fail" in str(src):
        raise RuntimeError("tool crashed")
    prs = Presentation(str(src))
    prs.core_properties.subject = "re-saved by the tool"
    prs.save(str(dst))


PROMPT = "Compare the titles."  # the TitleJudge's "prompt": tests change it to check judge pinning


class TitleJudge(Component):
    """1.0 when the prediction's title equals the target's, else 0.0."""

    def fingerprint_texts(self):
        return [PROMPT]

    class Options(Options):
        fail: str = ""  # "", "judge" or "infra"

    def judge(self, task, prediction, evidence):
        subjects = {
            role: Presentation(str(evidence.path(role))).core_properties.subject
            for role in ("original", "target")
        }
        evidence.write_json(self.context.label, "subjects.json", subjects)
        if self.options.fail == "judge":
            raise ValueError("judge bug")
        if self.options.fail == "infra":
            raise InfraError("judge model unreachable")
        same = deck_title(prediction.path) == deck_title(task.target)
        evidence.write_json(self.context.label, "looked.json", {"same": same})
        return Verdict(1.0 if same else 0.0, metrics={"same": same}, explanation="titles compared")


class DummyRenderer(Component):
    """A renderer that renders nothing (the fake tests need none)."""

    def render(self, deck_path, out_dir):
        raise InfraError("dummy renderer cannot render")


class InlineExecutor(Component):
    """Runs pairs one by one in the driver's main thread, where a Ctrl-C lands in the agent's code."""

    def execute(self, jobs, run):
        for job in jobs:
            yield job, run.compute_pair(job.agent, job.task, job.epoch)

    def stop(self):
        pass

    def close(self):
        pass


class CrashOnStopExecutor(InlineExecutor):
    """Stopping it ends the process at once, as Ray's driver does when a task cancellation races a
    task's reply (a RAY_CHECK failure exits the process)."""

    def stop(self):
        os._exit(1)


@pptarena.hookimpl
def register_executors(register):
    register("crash-on-stop", CrashOnStopExecutor)
    register("inline", InlineExecutor)


@pptarena.hookimpl
def register_datasets(register):
    register("fake", FakeDataset)


@pptarena.hookimpl
def register_agents(register):
    register("retitle", RetitleAgent)
    register("hang", HangAgent)
    register("asker", AskerAgent)
    register("asker-inproc", InProcessAsker)
    register("resaving", ResavingAgent)
    register("crash", CrashAgent)
    register("slowcopy", InProcessCopy)
    register("swallower", SwallowingCopy)
    register("leaky", LeakyCopy)
    register("encoding-leaker", EncodingLeaker)
    register("noting", NotingAgent)
    register("exit", ExitAgent)
    register("stray", StrayAgent)
    register("desktop", DesktopAgent)
    register("forger", ForgerAgent)


@pptarena.hookimpl
def register_judges(register):
    register("title", TitleJudge)


@pptarena.hookimpl
def register_renderers(register):
    register("dummy", DummyRenderer)
