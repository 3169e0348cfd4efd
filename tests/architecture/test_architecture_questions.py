"""docs/architecture.md's "Where does it happen?" table names modules and functions that exist.

The table answers a newcomer's first questions with a module and a function; a move or a rename
that forgets the table must fail here, not mislead a reader later.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
ROW = re.compile(r"^\|\s*(\d+)\s*\|(.+?)\|\s*`([\w.]+)`\s*\|\s*`([\w.]+)`\s*\|\s*$")


def question_rows() -> list[tuple[int, str, str, str]]:
    """The table's rows: number, question, module, dotted attribute."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Where does it happen?", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = ROW.match(line)
        if m:
            rows.append((int(m.group(1)), m.group(2).strip(), m.group(3), m.group(4)))
    return rows


def test_the_table_has_twenty_numbered_questions() -> None:
    rows = question_rows()
    assert [r[0] for r in rows] == list(range(1, 21))
    assert all(r[1].endswith("?") for r in rows), [r[1] for r in rows if not r[1].endswith("?")]
    assert len({r[1] for r in rows}) == 20


@pytest.mark.parametrize("number,question,module,attr", question_rows())
def test_every_answer_imports(number: int, question: str, module: str, attr: str) -> None:
    assert module.startswith("pptarena."), f"question {number}: {module} is not a pptarena module"
    obj = importlib.import_module(module)
    for name in attr.split("."):
        assert hasattr(obj, name), f"question {number} ({question}): {module} has no {attr}"
        obj = getattr(obj, name)
