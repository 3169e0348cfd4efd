"""Answers for the harness's own model-using components, recognised by their prompts.

The simulator never imports the plugins; it knows their prompts by a few stable phrases and
answers in the form each one parses:

* the ``dual`` judge (instruction following and visual quality): ``{"score": 4, "reason": ...}``;
* the ``rubric`` judge: an ``llm`` leaf gets ``{"score": 1, "reason": ...}`` (any prompt that
  asks for a score), an explanation request gets a plain sentence;
* the PPTPilot agents (``hybrid``, ``code``, ``xml``): the router gets
  ``{"route": "code", ...}``, the code branch a python-pptx program that writes a note on
  slide 1 (a harmless, valid edit), the XML planner the first slide part offered, the XML
  editor the first offered part back unchanged, the verifier ``{"done": true}``.
"""

from __future__ import annotations

import json
import re

from pptarena.models.sim.prompt import Prompt

CODE_PROGRAM = """```python
from pptx import Presentation

prs = Presentation(INPUT_PATH)
if len(prs.slides):
    frame = prs.slides[0].notes_slide.notes_text_frame
    if frame is not None:
        frame.text = "Checked by the provider simulator."
prs.save(OUTPUT_PATH)
```"""

_SLIDE_PART = re.compile(r"\bppt/slides/slide\d+\.xml\b")
_PART_BLOCK = re.compile(r"=== (\S+) ===\nRelationships: [^\n]*\n(.*?)(?=\n\n=== \S+ ===\n|\Z)", re.S)


def _dump(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _xml_edit(prompt: Prompt) -> str:
    for text in prompt.user_texts():
        m = _PART_BLOCK.search(text)
        if m and m.group(2).strip().startswith("<"):
            return f"MODIFIED_XML_FILE: {m.group(1)}\n```xml\n{m.group(2).strip()}\n```\n"
    return "No changes needed."


def _xml_select(prompt: Prompt) -> str:
    for text in prompt.user_texts():
        m = _SLIDE_PART.search(text)
        if m:
            return _dump({"parts": [m.group(0)], "reason": "The provider simulator picks the first slide."})
    return _dump({"parts": [], "reason": "The provider simulator found no slide part."})


def harness_reply(prompt: Prompt) -> str | None:
    """The answer one of the harness's components expects for ``prompt``, or None."""
    system = prompt.system_text()
    last = prompt.last_user_text()
    if "judge of PowerPoint edits" in system:
        return _dump({"score": 4, "reason": "The simulated judge finds the main change made."})
    if "judge of slide design" in system:
        return _dump({"score": 4, "reason": "The simulated judge finds the slides clean."})
    if "route PowerPoint editing requests" in system:
        return _dump({"route": "code", "reason": "The provider simulator always routes to code."})
    if "writing a Python program that uses python-pptx" in system:
        return CODE_PROGRAM
    if "You plan an edit of a PowerPoint deck done by rewriting OOXML parts" in system:
        return _xml_select(prompt)
    if "You edit PowerPoint decks by rewriting OOXML parts" in system:
        return _xml_edit(prompt)
    if "You check an edited PowerPoint deck" in system:
        return _dump({"done": True})
    if "Explain in 1 to 5 sentences" in last and "Criterion:" in last:
        return "The simulated model finds the criterion's sub-criteria met as their scores show."
    if re.search(r"\bscore\b", system + "\n" + last, re.I):
        return _dump({"score": 1, "reason": "The simulated model finds the criterion met."})
    return None


__all__ = ["CODE_PROGRAM", "harness_reply"]
