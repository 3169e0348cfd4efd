"""The ``code`` branch: the model writes a python-pptx program that runs in the sandbox.

Each attempt gets its own folder ``pilot/code/<label>-a<N>/`` holding the program
(``program.py``) and its output. The program runs through
:func:`pptarena.trust.sandbox.run_python` (time, CPU, memory, file-size and disk limits, no
network, scrubbed environment; under bubblewrap it sees only the current deck as
``input.pptx`` in a private tmpfs working directory, never the run folder) with
``INPUT_PATH`` and ``OUTPUT_PATH`` defined. The output deck comes back on a pipe the
harness holds (size-capped), so a link or FIFO the program leaves cannot be read as
its output; a traceback, a timeout or a missing output goes back to the model.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from pptarena.models import Message
from pptarena.plugins.agents.pptpilot.branch import Branch, CandidateError
from pptarena.plugins.agents.pptpilot.context import (
    EditRequest,
    request_text,
    summary_text,
)

MAX_PROGRAM_CHARS = 200_000

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)

_RUNNER = """
import os, runpy
_in, _out = os.path.abspath("input.pptx"), os.path.abspath("output.pptx")
try:
    runpy.run_path("program.py", init_globals={"INPUT_PATH": _in, "OUTPUT_PATH": _out}, run_name="__main__")
finally:
    if os.path.isfile(_out) and not os.path.islink(_out):
        sandbox_export(_out)
"""


def extract_program(reply: str) -> str:
    """The Python program in a reply: the longest ```python block, or an unfenced program.

    Raises :class:`CandidateError` when there is none.
    """
    blocks = [b for b in _FENCE.findall(reply) if b.strip()]
    if blocks:
        program = max(blocks, key=len)
    elif re.search(r"^\s*(from pptx|import pptx)", reply, re.MULTILINE) and "```" not in reply:
        program = reply
    else:
        raise CandidateError("the answer holds no ```python block with a program")
    if len(program) > MAX_PROGRAM_CHARS:
        raise CandidateError(
            f"the program is {len(program)} characters long, over the {MAX_PROGRAM_CHARS} limit"
        )
    try:
        compile(program, "program.py", "exec")
    except SyntaxError as exc:
        raise CandidateError(
            f"the program does not compile: {exc.msg} (program.py, line {exc.lineno})"
        ) from None
    return program


class CodeBranch(Branch):
    """Edits through a model-written python-pptx program run in the sandbox."""

    name = "code"

    def __init__(self, *, limits: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.limits = limits

    def prepare(self, request: EditRequest, state: Path) -> list[Message]:
        """System rules, then the request, the deck summary and slide renders."""
        from pptarena.deck import summarize
        from pptarena.plugins.agents.pptpilot.prompts import CODE_SYSTEM

        summary = summarize(state)
        parts: list[Any] = [
            request_text(request),
            "Deck summary (JSON):\n" + summary_text(summary, self.view.max_summary_chars),
            *self.slide_views(request, state),
        ]
        return [Message.system(CODE_SYSTEM), Message.user(*parts)]

    def produce(self, reply: str, state: Path, candidate: Path, attempt: int) -> dict[str, Any]:
        """Run the reply's program on a copy of ``state``; the output becomes ``candidate``."""
        from pptarena.trust.sandbox import run_python

        program = extract_program(reply)
        run_dir = self.work_dir / "code" / f"{candidate.stem}"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        deck_out = run_dir / "output.pptx"
        (run_dir / "program.py").write_text(program, encoding="utf-8")
        result = run_python(
            _RUNNER,
            limits=self.limits,
            extra_files={"program.py": program},
            files={"input.pptx": Path(state)},
            export="output.pptx",
            export_to=deck_out,
        )
        self.workspace.log.write(
            "code_run",
            dir=str(run_dir),
            returncode=result.returncode,
            timed_out=result.timed_out,
            duration_s=result.duration_s,
            network_isolated=result.network_isolated,
            isolation=result.isolation,
            stdout=result.stdout[-4000:],
            stderr=result.stderr[-4000:],
        )
        if not result.ok:
            raise CandidateError(f"the program failed: {result.error_text(6000)}")
        if not result.exported or not deck_out.is_file():
            raise CandidateError(
                "the program finished but did not save the deck to OUTPUT_PATH"
                + (f" ({'; '.join(result.notes)})" if result.notes else "")
            )
        shutil.move(str(deck_out), candidate)
        return {"program": str(run_dir / "program.py"), "code_duration_s": result.duration_s}

    def retry_message(self, error: str) -> str:
        """The traceback (or other failure) and a request for the whole corrected program."""
        from pptarena.plugins.agents.pptpilot.prompts import CODE_RETRY

        return CODE_RETRY.format(error=error)
