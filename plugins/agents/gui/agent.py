"""The ``gui`` agent's component: :class:`GuiAgent`, its options, and how the saved deck comes back.

:meth:`GuiAgent.edit` runs one episode (:mod:`.env` starts Impress on a virtual screen, :mod:`.loop`
runs the model's steps), then saves the deck through the GUI and copies it back without following a
link (:func:`hand_back_deck`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from pptarena.models import ModelRef
from pptarena.types import AgentError, Component, ComponentContext, Options, Prediction, Task, Workspace

from .actions import Screen

SAVE_RESERVE_DEFAULT = 60.0


class GuiOptions(Options):
    """Options of the ``gui`` agent (an ``[[agents]]`` table with ``use = "gui"``)."""

    model: ModelRef = Field(description='"<backend>/<model>" of the computer-use model')
    action_space: Literal["json", "openai", "anthropic"] = Field(
        "json",
        description="how model output is read: json (text), openai (computer_call), anthropic (tool_use)",
    )
    max_steps: int = Field(
        30, ge=1, le=500, description="model steps before the deck is saved anyway (PPT-Eval: 30)"
    )
    screen: str = Field("1280x800", description="virtual screen size WIDTHxHEIGHT")
    image_size: str | None = Field(
        None, description="resize screenshots to WIDTHxHEIGHT for the model; default: screen"
    )
    coordinate_scale: int = Field(
        0,
        ge=0,
        le=100_000,
        description="json space: coordinates on a 0..N grid (e.g. 1000); 0 = screenshot pixels",
    )
    history_images: int = Field(
        2, ge=1, le=30, description="screenshots of the latest steps kept in the prompt"
    )
    step_delay: float = Field(0.5, ge=0, le=10, description="seconds to let the UI settle after each action")
    native: bool = Field(
        True,
        description="openai/anthropic: run the provider's computer-use conversation (tool definition, tool "
        "calls answered by tool results holding the screenshot); false: plain text turns",
    )
    safety_checks: Literal["stop", "acknowledge"] = Field(
        "stop",
        description="OpenAI pending_safety_checks: stop the episode (deck saved as is) "
        "or acknowledge and go on",
    )
    send_tools: bool = Field(
        False,
        description="native = false only: also pass the provider's computer tool definition "
        "as request params",
    )
    temperature: float | None = Field(
        None, ge=0, le=2, description="sampling temperature (default: the backend's)"
    )
    max_tokens: int | None = Field(
        None, gt=0, description="output-token limit per step (default: the backend's)"
    )
    save_reserve: float = Field(
        SAVE_RESERVE_DEFAULT, ge=10, description="seconds kept from the task timeout for saving and closing"
    )
    start_timeout: float = Field(90.0, gt=0, description="seconds to wait for Impress to show the deck")

    @field_validator("screen", "image_size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is not None:
            Screen.parse(value)
        return value


class GuiAgent(Component):
    """Edits a deck by operating LibreOffice Impress through screenshots, mouse and keyboard."""

    Options = GuiOptions
    #: on a Ray cluster each episode needs a node advertising a ``desktop`` (docs/distributed.md)
    resources = {"desktop": 1}
    #: What the agent hands back besides the deck (see pptarena.run.configuration.requirements): its Impress
    #: profile's settings file, in ``Prediction.metadata["files"]``.
    provides = ("libreoffice_settings",)

    def __init__(self, options: GuiOptions, context: ComponentContext):
        from .env import check_programs

        super().__init__(options, context)
        self.options: GuiOptions = options
        check_programs()

    def edit(self, task: Task, workspace: Workspace) -> Prediction:
        """Run one GUI episode on a copy of the input deck; the saved .pptx is the prediction."""
        from .adapters import make_adapter
        from .env import ImpressScreen, ScreenError
        from .loop import Trajectory, run_episode

        opts = self.options
        started = time.monotonic()
        deadline = None
        if workspace.timeout:
            deadline = started + max(5.0, workspace.timeout - opts.save_reserve)
        client = workspace.model(opts.model)
        adapter = make_adapter(opts.action_space, opts.coordinate_scale)
        screen = Screen.parse(opts.screen)
        image_size = Screen.parse(opts.image_size) if opts.image_size else None
        params: dict[str, object] = {}
        if opts.temperature is not None:
            params["temperature"] = opts.temperature
        if opts.max_tokens is not None:
            params["max_tokens"] = opts.max_tokens
        if opts.send_tools and not opts.native:
            params.update(adapter.request_params(image_size or screen))
        trajectory = Trajectory(workspace.dir / "trajectory")
        scratch = Path(tempfile.mkdtemp(prefix="pptarena-gui-"))
        deck = scratch / "deck" / Path(workspace.input_deck).name
        deck.parent.mkdir()
        shutil.copyfile(workspace.input_deck, deck)
        saved = scratch / "deck" / f"saved-{deck.stem}.pptx"
        workspace.log.write("gui_start", screen=str(screen), action_space=opts.action_space, model=opts.model)
        env = ImpressScreen(screen, workdir=scratch / "env", start_timeout=opts.start_timeout)
        try:
            env.open(deck)
            result = run_episode(
                env,
                client,
                adapter,
                task.instruction,
                trajectory=trajectory,
                log=workspace.log,
                max_steps=opts.max_steps,
                image_size=image_size,
                coordinate_scale=opts.coordinate_scale,
                history_images=opts.history_images,
                step_delay=opts.step_delay,
                deadline=deadline,
                request_params=params,
                native=opts.native,
                safety_checks=opts.safety_checks,
            )
            if not env.office_running():
                raise AgentError("Impress was closed during the episode, so the deck could not be saved")
            try:
                env.save_as(saved, timeout=max(20.0, opts.save_reserve - 15))
            except ScreenError as exc:
                raise AgentError(f"saving the deck through the GUI failed: {exc}") from exc
        finally:
            env.close()
            workspace.log.write("gui_closed", seconds=round(time.monotonic() - started, 1))
        try:
            handed = hand_back_deck(saved, workspace.output_deck, scratch)
            files = _hand_back_settings(scratch / "env" / "profile", workspace.dir, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if not handed:
            raise AgentError(f"the file Impress saved ({saved.name}) is not a .pptx package")
        # the runner counts usage through the workspace's model clients: Prediction.usage stays
        # empty (it would be added twice); the agent's own sum is kept in the metadata
        usage = client.usage.as_dict() if hasattr(client, "usage") else {}
        return Prediction(
            path=workspace.output_deck,
            notes=result.note[:2000],
            metadata={
                "model_usage": usage,
                "steps": result.steps,
                "stop_reason": result.stop_reason,
                "action_errors": result.action_errors,
                "action_space": opts.action_space,
                "trajectory": "trajectory/trajectory.jsonl",
                "files": files,
            },
        )


def hand_back_deck(saved: Path, output: Path, root: Path) -> bool:
    """Copy the deck Impress saved (below ``root``, a folder the harness made) to ``output``.

    The office (or a program it started) could have replaced the saved file or a folder on the way
    with a link (to the task's target, to ``/proc/self/environ``): nothing below ``root`` is followed
    (:func:`pptarena.trust.safeio.copy_regular`). :raises AgentError: a link, FIFO or device in its place.
    Returns False (``output`` removed) when the copy is not a .pptx package.
    """
    from pptarena.trust import safeio

    from .impress_jail import MAX_DECK_BYTES

    try:
        safeio.copy_regular(saved, output, MAX_DECK_BYTES, root=root)
    except FileNotFoundError:
        return False
    except safeio.UnsafeFileError as exc:
        raise AgentError(f"the deck Impress saved was replaced: {exc}") from None
    try:
        with zipfile.ZipFile(output) as package:
            ok = "ppt/presentation.xml" in package.namelist()
    except (zipfile.BadZipFile, OSError):
        ok = False
    if not ok:
        Path(output).unlink(missing_ok=True)
    return ok


def _hand_back_settings(profile: Path, task_dir: Path, root: Path) -> dict[str, str]:
    """Copy the episode's LibreOffice settings file into the task folder (for checkers that read it).

    Copied only as a regular file reached without following a link below ``root``: a settings file
    made a link to ``/proc/self/environ`` (or to any host file) is not copied.
    """
    from pptarena.trust import safeio

    from .impress_jail import MAX_SETTINGS_BYTES

    settings = profile / "user" / "registrymodifications.xcu"
    kept = task_dir / settings.name
    try:
        safeio.copy_regular(settings, kept, MAX_SETTINGS_BYTES, root=root)
    except (OSError, safeio.UnsafeFileError):
        return {}
    return {settings.name: str(kept)}
