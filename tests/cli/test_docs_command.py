"""`arena docs`: every page of docs/ is a topic, and every "docs/NAME.md" the code mentions opens.

The command is invoked directly (``docs_command``) with click's runner; the wheel's copy of the
pages is checked by tests/architecture/test_wheel_docs.py.
"""

from __future__ import annotations

import re
import tomllib

import pytest
from click.testing import CliRunner

from pptarena.cli.docs import docs_command, topic_name
from tests.support.paths import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(p.stem for p in DOCS.glob("*.md"))
# "docs/NAME.md" (and "docs/NAME.md#section") as messages, docstrings and example configs write it
_MENTION = re.compile(r"\bdocs/([A-Za-z0-9_-]+\.md(?:#[A-Za-z0-9_-]+)?)")


def invoke(*args: str):
    """``arena docs ARGS`` through click's runner."""
    return CliRunner().invoke(docs_command, list(args))


def mentions() -> set[str]:
    """Every ``docs/NAME.md`` written in the shipped code and example configs."""
    found = set()
    for folder, pattern in (("core", "*.py"), ("plugins", "*.py"), ("examples", "*.toml")):
        for path in (ROOT / folder).rglob(pattern):
            found |= {f"docs/{m}" for m in _MENTION.findall(path.read_text(encoding="utf-8"))}
    return found


def test_list_names_every_page_with_its_title():
    result = invoke("--list")
    assert result.exit_code == 0, result.output
    listed = [line.split()[0] for line in result.output.splitlines()]
    assert listed == PAGES
    backends = next(line for line in result.output.splitlines() if line.startswith("backends "))
    title = next(line for line in (DOCS / "backends.md").read_text().splitlines() if line.startswith("# "))
    assert backends.endswith(title[2:])
    assert invoke().output == result.output  # no topic lists too


@pytest.mark.parametrize("page", PAGES)
def test_every_page_prints_whole_and_has_a_path(page):
    shown = invoke(page)
    assert shown.exit_code == 0, shown.output
    assert shown.output == (DOCS / f"{page}.md").read_text(encoding="utf-8")
    where = invoke(page, "--path")
    assert where.exit_code == 0 and where.output == f"{DOCS / f'{page}.md'}\n"


def test_every_mention_in_code_and_examples_opens():
    found = mentions()
    assert {"docs/datasets.md", "docs/security.md"} <= found  # the scan sees the mentions
    for mention in sorted(found):
        result = invoke(mention, "--path")
        assert result.exit_code == 0, f"{mention}: {result.output}"
        assert result.output.strip() == str(DOCS / f"{topic_name(mention)}.md")


def test_a_terminal_gets_the_page_through_the_pager(monkeypatch):
    import click

    from pptarena.cli import docs

    paged = []
    monkeypatch.setattr(docs, "_paged", lambda: True)
    monkeypatch.setattr(click, "echo_via_pager", paged.append)
    assert invoke("security").exit_code == 0
    assert paged == [(DOCS / "security.md").read_text(encoding="utf-8")]


@pytest.mark.parametrize(
    "spelling", ["datasets", "datasets.md", "docs/datasets.md", "docs/datasets.md#osworld"]
)
def test_a_topic_may_be_spelled_as_messages_spell_it(spelling):
    assert invoke(spelling, "--path").output == f"{DOCS / 'datasets.md'}\n"


def test_an_unknown_topic_suggests_a_close_one():
    result = invoke("backend")
    assert result.exit_code != 0
    assert "did you mean 'backends'" in result.output and "architecture" in result.output


def test_path_without_a_topic_is_the_folder_whose_images_the_pages_show():
    result = invoke("--path")
    assert result.exit_code == 0 and result.output == f"{DOCS}\n"
    shown = {i for page in DOCS.glob("*.md") for i in re.findall(r"\]\((img/[^)\s#]+)\)", page.read_text())}
    assert shown and all((DOCS / image).is_file() for image in shown)


def test_the_wheel_maps_docs_into_the_package():
    """pyproject ships every page and every image a page shows as ``pptarena/docs/...``."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setup["package-dir"]["pptarena.docs"] == "docs"
    assert {"pptarena.docs", "pptarena.docs.img"} <= set(setup["packages"])
    data = setup["package-data"]
    for page in DOCS.glob("*.md"):
        assert any(page.match(p) for p in data["pptarena.docs"]), page
        for image in re.findall(r"\]\(img/([^)\s#]+)\)", page.read_text()):
            assert any((DOCS / "img" / image).match(p) for p in data["pptarena.docs.img"]), image
