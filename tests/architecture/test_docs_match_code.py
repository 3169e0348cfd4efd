"""The docs name what the code has: hooks, commands and module paths (issue 24, item 6).

Each check reads the docs as a user would and compares them with the code, so a renamed module,
a new command or a new hook that the docs do not mention fails here instead of surprising a user.
"""

from __future__ import annotations

import importlib
import re

import click
import pytest

from pptarena import hookspecs
from pptarena.cli.main import cli
from tests.support.paths import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def hook_names() -> set[str]:
    """The hook specifications the plugin manager knows."""
    return {
        name for name in dir(hookspecs) if name.startswith("register_") and callable(getattr(hookspecs, name))
    }


def command_paths(group: click.Group, prefix: str = "") -> set[str]:
    """Every `arena` command and sub-command, as the words a user types (`dataset export`)."""
    ctx = click.Context(group)
    found: set[str] = set()
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        path = f"{prefix}{name}"
        found.add(path)
        if isinstance(command, click.Group):
            found |= command_paths(command, prefix=f"{path} ")
    return found


def readme_command_table() -> str:
    """The text of the README's "Commands" table."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Commands\n(.*?)^## ", text, flags=re.S | re.M)
    assert match, "README.md has no '## Commands' section"
    return match.group(1)


def test_every_hook_is_named_in_the_readme_and_the_plugin_guide() -> None:
    hooks = hook_names()
    assert len(hooks) >= 6
    plugin_guide = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    missing = sorted(h for h in hooks if h not in plugin_guide)
    assert not missing, f"docs/plugins.md does not name the hooks {missing}"
    readme = README.read_text(encoding="utf-8")
    missing = sorted(h for h in hooks if h not in readme)
    assert not missing, f"README.md does not name the hooks {missing}"
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    counted = re.findall(r"\b(one|two|three|four|five|six|seven|eight|nine|\d+) pluggy hooks", readme)
    assert counted, "README.md no longer says how many pluggy hooks there are"
    assert all(c in (words.get(len(hooks)), str(len(hooks))) for c in counted), (
        f"README.md says {counted} pluggy hooks; the code has {len(hooks)}"
    )


def test_every_arena_command_is_in_the_readme_table_and_every_row_exists() -> None:
    table = readme_command_table()
    rows = re.findall(r"^\| `arena ([a-z][a-z-]*(?: [a-z][a-z-|\\]*)?)", table, flags=re.M)
    assert rows, "the README's command table has no `arena ...` rows"
    commands = command_paths(cli)
    top_level = {c for c in commands if " " not in c}
    named_top = {row.split()[0] for row in rows}
    missing = sorted(top_level - named_top)
    assert not missing, f"arena commands missing from README's command table: {missing}"
    for row in rows:
        words = row.split()
        assert words[0] in top_level, f"README's table names `arena {row}`, which does not exist"
        if len(words) > 1 and isinstance(cli.get_command(click.Context(cli), words[0]), click.Group):
            for sub in words[1].replace("\\", "").split("|"):
                assert f"{words[0]} {sub}" in commands, f"README's table names `arena {words[0]} {sub}`"


MODULE_RE = re.compile(r"`(pptarena(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


def documented_module_paths() -> dict[str, set[str]]:
    """Dotted `pptarena....` names in backticks, per doc file."""
    found: dict[str, set[str]] = {}
    for doc in [README, *DOCS]:
        for name in MODULE_RE.findall(doc.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(doc.name)
    return found


def resolves(dotted: str) -> bool:
    """True when `dotted` is an importable module or an attribute of one (a class, a function)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_module_path_named_in_the_docs_imports() -> None:
    names = documented_module_paths()
    assert len(names) > 10, "expected the docs to name pptarena modules"
    broken = {name: sorted(docs) for name, docs in names.items() if not resolves(name)}
    assert not broken, f"module paths named in the docs that do not import: {broken}"


@pytest.mark.parametrize("name", ["pptarena.nonexistent_module", "pptarena.types.NoSuchType"])
def test_the_module_check_can_fail(name: str) -> None:
    assert not resolves(name)
