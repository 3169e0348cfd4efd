"""Byte-for-byte check of the deck engine's output, for performance work (not run by CI).

``dump`` writes, for a fixed set of decks, the canonical JSON of: every corpus deck's summary,
its self-diff, the diff and PPT-Eval view (the ``ppt_diff`` published rubrics read) of each pair of
neighbouring corpus decks, the rubric stand-in pair (poi_stress013 and its edited copy, as the
rubric tests make it) and the 200-slide generated pair of ``deck_bench.py``. ``check`` recomputes
everything with the current code and reports every entry that differs.

The generated decks are written once into ``--decks`` (python-pptx stamps creation times, so
regenerating them would change the summaries): dump with the old code, check with the new code,
both against the same folder.

Run: ``python benchmarks/deck_golden.py dump /tmp/golden.json --decks /tmp/golden-decks`` then
``python benchmarks/deck_golden.py check /tmp/golden.json --decks /tmp/golden-decks``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from pptarena.deck import DeckError, diff_decks, ppteval_diff, summarize
from pptarena.deck.summary import to_json_text

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))


def _decks(folder: Path) -> list[tuple[Path, Path]]:
    from deck_bench import edit_deck, make_deck

    folder.mkdir(parents=True, exist_ok=True)
    a, b = folder / "gen200-a.pptx", folder / "gen200-b.pptx"
    if not a.exists():
        make_deck(200, a)
        edit_deck(a, b)
    stand_in = CORPUS / "poi_stress013.pptx"
    edited = folder / "stand-in-edited.pptx"
    if not edited.exists():
        from tests.support.rubric_fixtures import edited_copy

        edited_copy(stand_in, edited)
    return [(a, b), (stand_in, edited)]


def _canon(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=False, default=repr)


def compute(folder: Path) -> dict[str, str]:
    """Entry name -> sha256 of its canonical JSON text (full text kept for the failures)."""
    out: dict[str, str] = {}
    decks = sorted(p for p in CORPUS.iterdir() if p.suffix.lower() in (".pptx", ".pptm", ".ppsx", ".potx"))
    good = []
    for path in decks:
        try:
            s = summarize(path)
        except DeckError as exc:
            out[f"summary:{path.name}"] = f"DeckError {exc}"
            continue
        good.append(path)
        out[f"summary:{path.name}"] = to_json_text(s)
        out[f"selfdiff:{path.name}"] = _canon(diff_decks(path, path).to_json())
    pairs = list(zip(good, good[1:], strict=False)) + _decks(folder)
    for a, b in pairs:
        d = diff_decks(a, b)
        key = f"{a.name}->{b.name}"
        out[f"diff:{key}"] = _canon(d.to_json())
        out[f"text:{key}"] = d.to_text()
        out[f"ppteval:{key}"] = _canon(ppteval_diff(d).to_json())
    for a, b in _decks(folder):
        out[f"summary:{a.name}"] = to_json_text(summarize(a))
        out[f"summary:{b.name}"] = to_json_text(summarize(b))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("dump", "check"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--decks", type=Path, default=Path("/tmp/pptarena-golden-decks"))
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit("needs ../shared/corpus")
    now = compute(args.decks)
    if args.mode == "dump":
        args.file.write_text(json.dumps(now, ensure_ascii=False))
        size = sum(len(v) for v in now.values())
        print(f"dumped {len(now)} entries ({size} characters) to {args.file}")
        return
    old = json.loads(args.file.read_text())
    bad = sorted(k for k in set(old) | set(now) if old.get(k) != now.get(k))
    digest = hashlib.sha256("".join(now[k] for k in sorted(now)).encode()).hexdigest()[:16]
    for k in bad[:20]:
        print(f"DIFFERS: {k}")
    print(f"{len(now)} entries, {len(bad)} differ (sha256 of all: {digest})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
