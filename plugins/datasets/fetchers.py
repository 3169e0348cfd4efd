"""``arena dataset fetch`` for the PPTArena and PPT-Eval datasets (OSWorld's is in ``osworld/fetch.py``).

* ``pptarena``: the Hugging Face dataset ``mofengenden/PPTArena`` (the JSON and both deck folders),
  through ``huggingface_hub``'s snapshot download;
* ``ppteval``: the twelve source decks, from the archive.org URLs PPT-Eval lists in
  ``data/files/PowerPoint/files.txt`` of its checkout (``--source``), saved under the names
  PPT-Eval's ``hydrate_data.py`` gives them.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from pptarena.fetch import FetchDescription, Fetcher, FetchError

PPTARENA_REPO = "mofengenden/PPTArena"
PPTC_ARCHIVE = "https://codeload.github.com/gydpku/PPTC/zip/refs/heads/main"


def pptc_description() -> FetchDescription:
    """PPTC's source and licence."""
    return FetchDescription(
        source="the PPTC repository (github.com/gydpku/PPTC) as a zip archive: its sessions and templates",
        licence="MIT (PPTC's LICENSE, Copyright (c) 2023 gydpku).",
        notes=[
            "PPTC ships no decks: after the download, run its own preparation once in DIR (the "
            "printed commands; python-pptx only). --task is not used."
        ],
    )


def pptc_fetch(fetcher: Fetcher, dest: Path, task_globs: list[str], source: str | None) -> str:
    """The repository archive (``source``: a mirror URL of it), extracted into ``dest/PPTC``."""
    archive = fetcher.url(source or PPTC_ARCHIVE, "PPTC.zip")
    root = fetcher.unzip(archive, "PPTC")
    return (
        f'[dataset]\nuse = "pptc"\nroot = "{root}"\n\n'
        f"# make the decks once (PPTC's own script): cd {root} && python3 main.py --prepare --dataset "
        "short --user_path ./ && python3 main.py --prepare --dataset long --user_path ./"
    )


def pptarena_description() -> FetchDescription:
    """PPTArena's source and licence."""
    return FetchDescription(
        source=f"the Hugging Face dataset {PPTARENA_REPO} (evaluation pairs, originals, ground truths)",
        licence="MIT on the dataset card; the decks are third-party presentations without per-file "
        "provenance: use them for evaluation, check before redistributing.",
        notes=["--task is not used: the dataset is fetched whole (about 100 cases)."],
    )


def pptarena_fetch(fetcher: Fetcher, dest: Path, task_globs: list[str], source: str | None) -> str:
    """The whole dataset repository into ``dest`` (``source``: a hub mirror URL)."""
    fetcher.hf_snapshot(PPTARENA_REPO, endpoint=source)
    return f'[dataset]\nuse = "pptarena"\nroot = "{dest}"'


def ppteval_description() -> FetchDescription:
    """PPT-Eval's decks: source and licence."""
    return FetchDescription(
        source="the 12 source decks PPT-Eval lists in data/files/PowerPoint/files.txt (archive.org); give "
        "your PPT-Eval checkout with --source",
        licence="the decks are public documents archived on archive.org, each under its author's terms; "
        "PPT-Eval's own files follow its repository's licence.",
        notes=[
            "PPT-Eval scores decks after a PowerPoint Online round trip (hydrate_data.py); these are the "
            "archived originals, so expect small metadata differences from PPT-Eval's copies."
        ],
    )


def ppteval_name(url: str) -> str:
    """The file name hydrate_data.py saves a URL under (unquoted, a doubled .pptx.pptx made single)."""
    name = unquote(PurePosixPath(urlparse(url).path).name)
    return name[: -len(".pptx")] if name.lower().endswith(".pptx.pptx") else name


def ppteval_fetch(fetcher: Fetcher, dest: Path, task_globs: list[str], source: str | None) -> str:
    """Each deck of ``files.txt`` into ``dest``; ``task_globs`` keep the decks of matching task ids."""
    import fnmatch

    if not source:
        raise FetchError("ppteval: give your PPT-Eval checkout with --source (its files.txt lists the decks)")
    listing = Path(source).expanduser() / "data" / "files" / "PowerPoint" / "files.txt"
    if not listing.is_file():
        raise FetchError(f"ppteval: {listing} does not exist; --source must be a PPT-Eval checkout")
    urls = [line.strip() for line in listing.read_text().splitlines() if line.strip().startswith("http")]
    for url in urls:
        name = ppteval_name(url)
        stem = name[: -len(".pptx")] if name.lower().endswith(".pptx") else name
        if task_globs and not any(
            fnmatch.fnmatchcase(f"{stem}-000", g.rsplit("-", 1)[0] + "-*") for g in task_globs
        ):
            continue
        fetcher.url(url, name)
    return f'[dataset]\nuse = "ppteval"\nroot = "{Path(source).expanduser()}"\ndecks_dir = "{dest}"'
