"""Bounded-cost alignment: difflib's answer on ordinary input, a fast valid alignment on hostile input."""

from __future__ import annotations

import difflib
import random

from pptarena.deck import diff_decks
from pptarena.deck.align import matching_blocks, opcodes, pair_cost, ratio


def test_same_as_difflib_within_budget():
    rng = random.Random(7)
    for _ in range(200):
        a = [rng.choice("abc") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("abc") for _ in range(rng.randint(0, 40))]
        sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
        assert opcodes(a, b) == sm.get_opcodes()
        assert ratio(a, b) == sm.ratio()


def test_over_budget_alignment_is_valid_and_keeps_common_ends():
    rng = random.Random(8)
    for _ in range(200):
        a = [rng.choice("ab") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("ab") for _ in range(rng.randint(0, 40))]
        ops = opcodes(a, b, budget=0)
        rebuilt: list[str] = []
        pos_a = pos_b = 0
        for op, i1, i2, j1, j2 in ops:
            assert (i1, j1) == (pos_a, pos_b)
            if op == "equal":
                assert a[i1:i2] == b[j1:j2]
            rebuilt += b[j1:j2]
            pos_a, pos_b = i2, j2
        assert (pos_a, pos_b) == (len(a), len(b)) and rebuilt == b
        assert 0.0 <= ratio(a, b, budget=0) <= 2 * _lcs(a, b) / max(1, len(a) + len(b)) + 1e-12


def _lcs(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag, row[0] = 0, 0
        for j, y in enumerate(b, start=1):
            prev_diag, row[j] = row[j], prev_diag + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def test_repetitive_long_text_is_cheap_and_still_similar():
    a = "a" * 20_000
    b = a[:500] + "X" + a[501:]
    assert pair_cost(a, b) > 10**8  # difflib alone takes tens of seconds on this pair
    assert ratio(a, b) > 0.999
    words = "".join(random.Random(1).choice("abcdefghij   ") for _ in range(20_000))
    changed = words[:9_000] + "ZZ" + words[9_002:]
    assert ratio(words, changed) > 0.95
    for i, j, n in matching_blocks(words, changed):
        assert words[i : i + n] == changed[j : j + n]


def test_diff_of_long_repetitive_paragraphs_finishes(tmp_path):
    """A hostile deck (pages of one repeated letter) diffs with the edit found, not after minutes."""
    from pptx import Presentation
    from pptx.util import Inches, Pt

    paths = []
    for k, text in enumerate(("a" * 15_000, "a" * 7_000 + "b" + "a" * 7_999)):
        prs = Presentation()
        slide = prs.slides.add_slide(prs.slide_layouts[6])
        frame = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(2)).text_frame
        for n in range(6):
            para = frame.paragraphs[0] if n == 0 else frame.add_paragraph()
            run = para.add_run()
            run.text = text
            run.font.size = Pt(12 if k == 0 else 14)
        paths.append(tmp_path / f"d{k}.pptx")
        prs.save(paths[-1])
    d = diff_decks(*paths)
    kinds = {e["kind"] for e in d.edits}
    assert kinds == {"text", "font"}, kinds
    assert sum(e["kind"] == "text" for e in d.edits) == 6
