"""The ``pptc`` dataset: PPTC's multi-turn sessions (Create_new_slides, Edit_PPT_template).

``root`` is a PPTC checkout: ``PPT_test_input/<set folder>/session_<k>.json`` are JSON Lines, one
turn per line (``Turn``, ``User instruction`` with optional ``## slide, A, B, relation`` position
restrictions, ``Feasible API sequence``, ``Base File``, ``Label File``, ``API Lack …``). PPTC ships
no decks: its ``main.py --prepare`` writes ``PPT_Base_File/`` and ``PPT_Label_File/`` by running
each turn's reference API sequence; ``decks_dir`` (default ``root``) is the folder that holds them.
Every missing deck is named in one error.

Two modes, as PPTC evaluates:

* ``turn``: one task per turn, starting from the turn's gold base deck, judged against its label
  deck; ``metadata["turn_history"]`` lists the earlier turns' instructions with their reference API
  sequences (PPTC's teacher forcing). Turn accuracy = mean ``pptx_match`` score.
* ``session``: one task per session with ``metadata["turns"]``; the runner gives the turns to the
  agent in order, each on the agent's own previous output (see :mod:`pptarena.run.sessions`).
  ``session_check`` says how a session is scored:

  - ``"pptc"`` (default), PPTC's session accuracy as its ``evaluate.py --sess`` computes it: the
    **final** deck against the final label, with the position restrictions of **every** turn
    (``metadata["session_score"] = "final"``). The earlier turns are judged too, each against its
    own label with its own restrictions, for information only (``turn_scores``). PPTC's gold
    decks fail it where a later turn moves an object an earlier restriction placed.
  - ``"every"``: stricter than PPTC: the session succeeds only if every turn does, each
    judged against its label with its own restrictions. (Not ``"every_turn"``: the config loader
    takes a value of 8+ characters under a key containing ``session`` for a secret.)

The instruction an agent sees is the text before ``##``; the restrictions go to the judge
(``metadata["pptc"]["restrictions"]``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

import pptarena
from pptarena.types import Options as BaseOptions
from pptarena.types import Task

from . import fetchers
from .common import DatasetError, LoadedDataset, one_as_list, resolve_inside
from .loader_tail import select_and_check_decks

SETS = {"short": "Create_new_slides", "long": "Edit_PPT_template"}
MAX_SESSION_BYTES = 4 * 1024 * 1024
PREPARE_HINT = (
    "PPTC does not ship its decks: run `python3 PPTC/main.py --prepare --dataset short` (and `long`; add "
    "`--api_lack` for the API-lack copies) in the PPTC checkout, which writes PPT_Base_File/ and "
    "PPT_Label_File/; point option 'decks_dir' at the folder holding them (default: root)."
)
_SESSION = re.compile(r"^session_(\d+)\.json$")


def split_instruction(text: str) -> tuple[str, list[str]]:
    """``"Do X. ## 0, star, slide, right"`` → ``("Do X.", [" 0, star, slide, right"])``.

    The restrictions are kept as written (the judge splits them on ``,`` and strips each field of
    spaces, as PPTC does).
    """
    head, *restrictions = text.split("##")
    return head.strip(), restrictions


def _read_session(path: Path) -> list[dict[str, Any]]:
    if path.stat().st_size > MAX_SESSION_BYTES:
        raise DatasetError(f"{path} is larger than {MAX_SESSION_BYTES} bytes")
    turns = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            turn = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} line {number}: not JSON: {exc}") from None
        for key in ("Turn", "User instruction", "Feasible API sequence", "Base File", "Label File"):
            if key not in turn:
                raise DatasetError(f"{path} line {number}: missing {key!r}")
        turns.append(turn)
    if [t["Turn"] for t in turns] != list(range(len(turns))):
        raise DatasetError(f"{path}: turns must be numbered 0, 1, 2… in order")
    if not turns:
        raise DatasetError(f"{path}: no turns")
    return turns


def load_pptc(
    root: Path,
    *,
    decks_dir: Path | None = None,
    sets: list[str] | tuple[str, ...] = ("short",),
    mode: str = "turn",
    api_lack: bool = False,
    ids: list[str] | tuple[str, ...] = (),
    check_decks: bool = True,
    session_check: str = "pptc",
) -> list[Task]:
    """Read PPTC's sessions under ``root`` into turn or session tasks (see the module docstring)."""
    root = Path(root).expanduser()
    decks = Path(decks_dir).expanduser() if decks_dir else root
    base_key, label_key = (
        ("API Lack Base File", "API Lack Label File") if api_lack else ("Base File", "Label File")
    )
    tasks: list[Task] = []
    extra_labels: dict[str, list[Path]] = {}  # session mode: the earlier turns' labels must exist too
    for set_name in sets:
        if set_name not in SETS:
            raise DatasetError(f"pptc dataset: unknown set {set_name!r} (choose from {sorted(SETS)})")
        folder = root / "PPT_test_input" / SETS[set_name]
        if not folder.is_dir():
            raise DatasetError(
                f"pptc dataset: {folder} does not exist (option 'root' must be a PPTC checkout)"
            )
        files = sorted((int(m.group(1)), p) for p in folder.iterdir() if (m := _SESSION.match(p.name)))
        for k, path in files:
            turns = _read_session(path)
            where = str(path)
            entries = []
            for turn in turns:
                text, restrictions = split_instruction(str(turn["User instruction"]))
                entries.append(
                    {
                        "turn": turn["Turn"],
                        "instruction": text,
                        "raw_instruction": turn["User instruction"],
                        "restrictions": restrictions,
                        "api_sequence": turn["Feasible API sequence"],
                        "base": resolve_inside(
                            decks, str(turn[base_key]), root=decks, what=base_key, where=where
                        ),
                        "label": resolve_inside(
                            decks, str(turn[label_key]), root=decks, what=label_key, where=where
                        ),
                    }
                )
            common = {"source": "pptc", "category": [SETS[set_name]], "session": k}
            if mode == "turn":
                for i, e in enumerate(entries):
                    history = [
                        {
                            "turn": h["turn"],
                            "instruction": h["instruction"],
                            "api_sequence": h["api_sequence"],
                        }
                        for h in entries[:i]
                    ]
                    tasks.append(
                        Task(
                            id=f"{set_name}-{k}-{e['turn']}",
                            instruction=e["instruction"],
                            original=e["base"],
                            target=e["label"],
                            metadata={
                                **common,
                                "turn": e["turn"],
                                "turn_history": history,
                                "pptc": {
                                    "restrictions": e["restrictions"],
                                    "api_sequence": e["api_sequence"],
                                    "raw_instruction": e["raw_instruction"],
                                },
                            },
                        )
                    )
            else:
                all_restrictions = [r for e in entries for r in e["restrictions"]]
                turn_rows = [
                    {
                        "instruction": e["instruction"],
                        "target": str(e["label"]),
                        "metadata": {
                            "pptc": {
                                "restrictions": e["restrictions"],
                                "api_sequence": e["api_sequence"],
                                "raw_instruction": e["raw_instruction"],
                            }
                        },
                    }
                    for e in entries
                ]
                session_meta: dict[str, Any] = {**common, "turns": turn_rows}
                session_meta["pptc"] = {"restrictions": all_restrictions, "session_check": session_check}
                if session_check == "pptc":  # PPTC's own: the final deck, with every turn's restrictions
                    turn_rows[-1]["metadata"]["pptc"]["restrictions"] = all_restrictions
                    session_meta["session_score"] = "final"
                elif session_check != "every":
                    raise DatasetError(f"pptc dataset: unknown session_check {session_check!r}")
                tasks.append(
                    Task(
                        id=f"{set_name}-{k}",
                        instruction=entries[0]["instruction"],
                        original=entries[0]["base"],
                        target=entries[-1]["label"],
                        metadata=session_meta,
                    )
                )
                extra_labels[tasks[-1].id] = [e["label"] for e in entries[:-1]]
    return select_and_check_decks(
        tasks,
        ids,
        source=f"pptc dataset {root}",
        check_decks=check_decks,
        decks_source=f"{root} with decks from {decks}",
        hint=PREPARE_HINT,
        extra_decks=extra_labels,
        extra_what="turn label",
    )


class PptcDataset(LoadedDataset):
    """PPTC sessions, per turn or per session (see docs/datasets.md, "pptc")."""

    fetch_description = staticmethod(fetchers.pptc_description)  # arena dataset fetch pptc
    fetch = staticmethod(fetchers.pptc_fetch)

    class Options(BaseOptions):
        """Options of the ``pptc`` dataset."""

        root: Path = Field(description="a PPTC checkout (the folder holding PPT_test_input/)")
        decks_dir: Path | None = Field(
            None, description="folder with PPT_Base_File/ and PPT_Label_File/ (default: root)"
        )
        sets: list[Literal["short", "long"]] = Field(
            default_factory=lambda: ["short"],  # type: ignore[arg-type]
            description="short = Create_new_slides, long = Edit_PPT_template",
        )
        mode: Literal["turn", "session"] = Field(
            "turn", description="turn: each turn from its gold base; session: chained"
        )
        api_lack: bool = Field(False, description="use the API-lack base/label decks")
        session_check: Literal["pptc", "every"] = Field(
            "pptc",
            description=(
                "session mode: pptc = PPTC's session accuracy (the final deck with every turn's "
                "restrictions); every = every turn must pass with its own restrictions"
            ),
        )
        ids: list[str] = Field(
            default_factory=list, description="shell-style globs on task ids (e.g. short-3-*)"
        )

        _one_as_list = field_validator("sets", "ids", mode="before")(one_as_list)

    def load(self) -> list[Task]:
        """Read and validate every selected task (raises :class:`DatasetError`)."""
        o = self.options
        return load_pptc(
            o.root,
            decks_dir=o.decks_dir,
            sets=o.sets,
            mode=o.mode,
            api_lack=o.api_lack,
            ids=o.ids,
            session_check=o.session_check,
        )


@pptarena.hookimpl
def register_datasets(register):
    """Register the ``pptc`` dataset."""
    register("pptc", PptcDataset)
