"""PPTPilot-style agents: ``code``, ``xml`` and ``hybrid``.

* ``code`` — the model writes a python-pptx program, run in the sandbox
  (:mod:`.code`); failures go back to the model, ``retries`` times.
* ``xml`` — the model picks OOXML parts and returns them rewritten whole;
  each is checked before it is applied (:mod:`.xml_branch`, :mod:`.package_parts`).
* ``hybrid`` — PPTPilot: a router call (``router_model``, cheaper) picks code
  or XML, its reason logged; then that branch (and, with ``fallback``, the
  other one if it fails); then ``loops`` rounds of render → verifier →
  repair (:mod:`.verify`). ``code`` and ``xml`` accept ``loops`` too.

Model usage is counted by the runner through the workspace's model clients;
``Prediction.usage`` stays empty (it would be added twice) and the agent's own
sum is in ``metadata["model_usage"]``.

What the agents see is described in :mod:`.context`: never the target
deck or the style target. Every model call, code run, patch and decision is
written to the task's ``agent.log.jsonl``.

When the first edit fails after every retry (and the fallback), the agent
raises :class:`~pptarena.types.AgentError` (``on_failure = "error"``, the
default) or hands in the unchanged input deck with ``metadata["failed"] =
True`` and a ``handed_in_input`` log event (``on_failure = "input"``). A
failed repair round never breaks the deck: the last good state is kept.
"""

from __future__ import annotations

import re
import shutil
from typing import Any, Literal

from pydantic import Field

from pptarena.models import Message, ModelRef
from pptarena.plugins.agents.pptpilot.branch import Branch, BranchOutcome
from pptarena.plugins.agents.pptpilot.context import (
    EditRequest,
    ModelCaller,
    ViewLimits,
    deck_dir,
    deck_outline,
    find_json_object,
    request_text,
)
from pptarena.types import AgentError, AgentTask, Component, Options, Prediction, Workspace

Route = Literal["code", "xml"]


class PilotOptions(Options):
    """Options shared by ``code``, ``xml`` and ``hybrid``."""

    model: ModelRef = Field(description='"<backend>/<model>" that writes the edits')
    retries: int = Field(2, ge=0, le=10, description="extra attempts after a failed edit (error fed back)")
    loops: int = Field(
        0, ge=0, le=10, description="render → verify → repair rounds after the edit (paper: 3)"
    )
    verifier_model: ModelRef | None = Field(None, description="model of the verifier; default: model")
    render_check: bool = Field(
        True, description="a candidate deck must render (when a renderer is configured)"
    )
    max_images: int = Field(8, ge=0, le=64, description="slide renders per prompt (0: none)")
    image_max_px: int = Field(1024, ge=64, le=4096, description="long edge of renders sent to models")
    max_summary_chars: int = Field(60_000, ge=1000, description="the deck summary is cut to this length")
    temperature: float | None = Field(
        None, ge=0, le=2, description="sampling temperature (default: the backend's)"
    )
    max_tokens: int | None = Field(
        None, gt=0, description="output-token limit per call (default: the backend's)"
    )
    on_failure: Literal["error", "input"] = Field(
        "error", description="when every attempt fails: raise AgentError, or hand in the unchanged input deck"
    )


class CodeOptions(PilotOptions):
    """Options of the ``code`` agent."""

    code_timeout: float = Field(60.0, gt=0, le=3600, description="seconds per program run")
    code_memory_mb: int = Field(2048, ge=256, le=65536, description="address-space limit of a program run")

    def one_call_per_attempt(self) -> bool:
        """One model call per attempt (the program) when there is no verify/repair round: batch mode
        may send it through a batch API (a retry after a failed program is one call more)."""
        return self.loops == 0


class XmlOptions(PilotOptions):
    """Options of the ``xml`` agent."""

    selection: Literal["model", "heuristic"] = Field(
        "model", description="who picks the parts to rewrite: a planning call, or the slide-number heuristic"
    )
    select_model: ModelRef | None = Field(None, description="model of the planning call; default: model")
    max_parts: int = Field(8, ge=1, le=100, description="parts shown to the model per edit")
    max_xml_chars: int = Field(200_000, ge=1000, description="total XML characters shown per edit")

    def one_call_per_attempt(self) -> bool:
        """One model call per attempt (the rewrite) with the heuristic part selection and no
        verify/repair round."""
        return self.loops == 0 and self.selection == "heuristic"


class HybridOptions(CodeOptions, XmlOptions):
    """Options of the ``hybrid`` (PPTPilot) agent."""

    router_model: ModelRef | None = Field(
        None, description="cheaper model for the routing call; default: model"
    )
    router_default: Route = Field(
        "xml", description="route when the router's answer is unreadable (PPTPilot: xml)"
    )
    fallback: bool = Field(True, description="when the routed branch fails, try the other one")

    def one_call_per_attempt(self) -> bool:
        """Never: the router's call comes before the branch's (batch it with ``batch = true``)."""
        return False


def parse_route(reply: str) -> tuple[Route | None, str]:
    """The router's choice and reason from ``{"route": ..., "reason": ...}`` or a bare token."""
    obj = find_json_object(reply)
    if obj is not None:
        raw = str(obj.get("route") or obj.get("strategy") or "").strip().lower()
        reason = str(obj.get("reason") or "")
        if raw in ("code", "python", "python-pptx", "python_pptx_edit"):
            return "code", reason
        if raw in ("xml", "xml_edit", "ooxml"):
            return "xml", reason
    head = reply.strip().upper()
    if re.match(r"^(PYTHON_PPTX_EDIT|CODE|PYTHON)\b", head):
        return "code", reply.strip()
    if re.match(r"^(XML_EDIT|XML)\b", head):
        return "xml", reply.strip()
    return None, ""


class PilotAgent(Component):
    """The common flow: (route) → branch edit with retries → optional verify/repair loops."""

    fixed_route: Route | None = None
    Options = PilotOptions

    def edit(self, task: AgentTask, workspace: Workspace) -> Prediction:
        """Edit ``workspace.input_deck`` for ``task.instruction``; write ``workspace.output_deck``."""
        from pptarena.plugins.agents.pptpilot.code import CodeBranch
        from pptarena.plugins.agents.pptpilot.verify import DeckChecker, verify_loop
        from pptarena.plugins.agents.pptpilot.xml_branch import XmlBranch
        from pptarena.trust.sandbox import SandboxLimits

        opts: Any = self.options
        log = workspace.log
        request = EditRequest.from_task(task)
        work = deck_dir(workspace)
        caller = ModelCaller(workspace, temperature=opts.temperature, max_tokens=opts.max_tokens)
        view = ViewLimits(opts.max_summary_chars, opts.max_images, opts.image_max_px)
        original = workspace.input_deck
        checker = DeckChecker(workspace, work / "renders", render=opts.render_check, baseline=original)
        log.write(
            "start",
            agent=self.context.name or type(self).__name__,
            model=opts.model,
            loops=opts.loops,
            retries=opts.retries,
            renderer=workspace.renderer is not None,
        )
        common = dict(
            caller=caller,
            model=opts.model,
            workspace=workspace,
            checker=checker,
            work_dir=work,
            retries=opts.retries,
            view=view,
        )

        def make(route: Route) -> Branch:
            if route == "code":
                limits = SandboxLimits(timeout=opts.code_timeout, memory_mb=opts.code_memory_mb)
                return CodeBranch(limits=limits, **common)
            return XmlBranch(
                selection=opts.selection,
                max_parts=opts.max_parts,
                max_xml_chars=opts.max_xml_chars,
                select_model=opts.select_model or opts.model,
                **common,
            )

        route, reason = self.route(request, caller, original)
        branch = make(route)
        outcome = branch.edit(request, original, "edit")
        tried = [self._outcome_json(outcome)]
        if not outcome.ok:
            log.write("branch_failed", branch=route, attempts=outcome.attempts, error=outcome.error)
            if getattr(opts, "fallback", False):
                other: Route = "xml" if route == "code" else "code"
                log.write("fallback", frm=route, to=other)
                branch = make(other)
                outcome = branch.edit(request, original, "fallback")
                tried.append(self._outcome_json(outcome))
                if not outcome.ok:
                    log.write("branch_failed", branch=other, attempts=outcome.attempts, error=outcome.error)
        metadata: dict[str, Any] = {"route": route, "router_reason": reason, "branches": tried}
        if not outcome.ok or outcome.path is None:
            return self._fail(workspace, caller, metadata, outcome)
        current = outcome.path
        rounds: list[dict[str, Any]] = []
        if opts.loops:
            current, rounds = verify_loop(
                caller=caller,
                verifier_model=opts.verifier_model or opts.model,
                request=request,
                branch=branch,
                checker=checker,
                original=original,
                current=current,
                loops=opts.loops,
                limits=view,
            )
        shutil.copyfile(current, workspace.output_deck)
        metadata.update(
            rounds=rounds,
            loops_completed=len(rounds),
            unchanged=current == original,
            model_calls=caller.calls,
            model_usage=caller.usage.as_dict(),
        )
        log.write("done", deck=str(workspace.output_deck), source=str(current), **metadata)
        note = f"{outcome.branch} edit" + (f", {len(rounds)} verify round(s)" if rounds else "")
        if current == original:
            note = "the model made no change"
        return Prediction(path=workspace.output_deck, notes=note, metadata=metadata)

    def route(self, request: EditRequest, caller: ModelCaller, deck: Any) -> tuple[Route, str]:
        """The fixed route of ``code``/``xml``; overridden by ``hybrid``."""
        assert self.fixed_route is not None
        return self.fixed_route, f"{self.fixed_route} agent"

    @staticmethod
    def _outcome_json(outcome: BranchOutcome) -> dict[str, Any]:
        return {
            "branch": outcome.branch,
            "ok": outcome.ok,
            "attempts": outcome.attempts,
            "error": outcome.error,
            "unchanged": outcome.unchanged,
        }

    def _fail(
        self, workspace: Workspace, caller: ModelCaller, metadata: dict[str, Any], outcome: BranchOutcome
    ) -> Prediction:
        opts: Any = self.options
        error = outcome.error or "no usable edit"
        if opts.on_failure == "input":
            shutil.copyfile(workspace.input_deck, workspace.output_deck)
            workspace.log.write("handed_in_input", reason=error)
            metadata.update(
                failed=True, error=error, model_calls=caller.calls, model_usage=caller.usage.as_dict()
            )
            return Prediction(
                path=workspace.output_deck,
                notes=f"edit failed, unchanged input handed in: {error[:300]}",
                metadata=metadata,
            )
        workspace.log.write("failed", error=error)
        raise AgentError(f"{outcome.branch} edit failed after {outcome.attempts} attempt(s): {error[:2000]}")


class CodeAgent(PilotAgent):
    """``code``: the model writes a python-pptx program, run in the sandbox with bounded retries."""

    fixed_route = "code"
    Options = CodeOptions


class XmlAgent(PilotAgent):
    """``xml``: the model rewrites whole OOXML parts, checked and applied to a copy of the package."""

    fixed_route = "xml"
    Options = XmlOptions


class HybridAgent(PilotAgent):
    """``hybrid`` (PPTPilot): router → code or XML branch → optional verify/repair loops."""

    Options = HybridOptions

    def route(self, request: EditRequest, caller: ModelCaller, deck: Any) -> tuple[Route, str]:
        """Ask the router model; an unreadable answer takes ``router_default`` (logged either way)."""
        from pptarena.deck import summarize
        from pptarena.plugins.agents.pptpilot.prompts import ROUTER_SYSTEM

        opts: HybridOptions = self.options  # type: ignore[assignment]
        prompt = request_text(request) + "\n\nThe deck:\n" + deck_outline(summarize(deck))
        reply = caller.call(
            "route", opts.router_model or opts.model, [Message.system(ROUTER_SYSTEM), Message.user(prompt)]
        )
        route, reason = parse_route(reply)
        source = "router"
        if route is None:
            route, reason, source = opts.router_default, "router reply unreadable; default route", "default"
        caller.workspace.log.write("route", route=route, reason=reason, source=source)
        return route, reason
