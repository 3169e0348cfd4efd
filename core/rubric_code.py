"""Facts about PPT-Eval rubric leaf code shared by the rubric judge, the dataset loaders and authoring.

- :data:`CONTEXT_NAMES`: the names every function leaf can read (PPT-Eval's verifier context).
- :func:`strip_code_fence`: the only fence ai-rubric's loader removes from ``function_code``.
"""

from __future__ import annotations

#: The names every function leaf can read (PPT-Eval's verifier context; the rubric judge gives the same).
CONTEXT_NAMES: tuple[str, ...] = (
    "ppt_diff",
    "original_ppt_screenshots",
    "modified_ppt_screenshots",
    "original_ppt_path",
    "modified_ppt_path",
    "llm_call",
    "vlm_call",
)


def strip_code_fence(code: str) -> str:
    """Remove a ```` ```python ```` fence around leaf code, as ai-rubric's loader does.

    Only a first line starting with ```` ```python ```` counts; any other fence stays and so fails
    to compile, exactly as it fails when the judge runs the leaf.
    """
    lines = code.strip("\n").splitlines()
    if lines and lines[0].lstrip().startswith("```python"):
        lines = lines[1:]
        if lines and lines[-1].strip() == "```":
            lines = lines[:-1]
        return "\n".join(lines) + "\n"
    return code
