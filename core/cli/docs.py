"""``arena docs [TOPIC] [--path] [--list]``: the project's documentation, from any install.

The repository's ``docs/`` folder (its Markdown pages and the images they show) ships in the wheel
as package data under ``pptarena/docs/``, so a user who did ``pip install pptarena`` can reach the
pages that example configs and messages name ("see docs/backends.md"): ``arena docs backends``
prints that page (through a pager in a terminal), ``arena docs backends --path`` prints where the
file is, ``arena docs --list`` lists the topics. A topic may be spelled as those mentions spell it:
``backends``, ``backends.md``, ``docs/backends.md`` or ``docs/datasets.md#osworld`` all work.

From a source checkout (``core/`` imported as ``pptarena``), the checkout's ``docs/`` is used.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

_HEADING = re.compile(r"^#\s+(.+?)\s*$", re.MULTILINE)


def docs_dir() -> Path:
    """The folder holding the documentation pages of the installed pptarena.

    ``pptarena/docs/`` in a wheel install; in a source checkout, the ``docs/`` folder beside
    ``core/`` (recognised by the checkout's ``pyproject.toml``).

    :raises click.ClickException: when neither folder holds a page (a broken install).
    """
    import pptarena

    package = Path(pptarena.__file__).resolve().parent
    candidates = [package / "docs"]
    if (package.parent / "pyproject.toml").is_file():
        candidates.append(package.parent / "docs")
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob("*.md")):
            return candidate
    raise click.ClickException(
        "the documentation is not installed with this pptarena "
        f"(looked in {', '.join(str(c) for c in candidates)}); reinstall pptarena from its wheel"
    )


def topics() -> list[str]:
    """The topic names: one per Markdown page, its file name without ``.md``, sorted."""
    return sorted(p.stem for p in docs_dir().glob("*.md"))


def topic_name(spelling: str) -> str:
    """The topic a mention spells, e.g. ``docs/datasets.md#osworld`` → ``datasets``.

    Accepts the bare name, ``<name>.md`` and ``docs/<name>.md``, with or without a ``#section``.
    """
    name = spelling.strip().split("#", 1)[0].replace("\\", "/").rstrip("/")
    if name.startswith("./"):
        name = name[2:]
    if name.startswith("docs/"):
        name = name[len("docs/") :]
    if name.endswith(".md"):
        name = name[: -len(".md")]
    return name.lower()


def topic_path(spelling: str) -> Path:
    """The installed Markdown file of a topic (any spelling :func:`topic_name` accepts).

    :raises click.ClickException: for an unknown topic, naming a close one when there is one.
    """
    name = topic_name(spelling)
    known = topics()
    if name not in known:
        from difflib import get_close_matches

        close = get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise click.ClickException(
            f"no documentation topic {spelling!r}{hint}; choose one of: {', '.join(known)}"
        )
    return docs_dir() / f"{name}.md"


def topic_title(path: Path) -> str:
    """The first level-one heading of a page (empty when it has none)."""
    found = _HEADING.search(path.read_text(encoding="utf-8"))
    return found.group(1) if found else ""


def _paged() -> bool:
    """Whether a page goes through the pager: when the output is a terminal."""
    return sys.stdout.isatty()


def _list_topics() -> None:
    names = topics()
    width = max(len(n) for n in names) + 2
    for name in names:
        click.echo(f"{name:<{width}}{topic_title(docs_dir() / f'{name}.md')}")


@click.command("docs")
@click.argument("topic", required=False)
@click.option("--path", "show_path", is_flag=True, help="Print the path of the page's file instead.")
@click.option("--list", "list_only", is_flag=True, help="List the topics and exit.")
def docs_command(topic: str | None, show_path: bool, list_only: bool) -> None:
    """Show the documentation page TOPIC (e.g. `arena docs backends`, paged in a terminal).

    TOPIC may be written as messages and example configs write it (`docs/backends.md`).
    Without TOPIC, lists the topics; with --path, prints the file's path (without TOPIC, the
    folder's), so the page can be opened in an editor or a Markdown viewer (images beside it).
    """
    if list_only or (topic is None and not show_path):
        _list_topics()
        return
    if topic is None:
        click.echo(str(docs_dir()))
        return
    path = topic_path(topic)
    if show_path:
        click.echo(str(path))
        return
    text = path.read_text(encoding="utf-8")
    if _paged():
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=not text.endswith("\n"))
