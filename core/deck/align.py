"""Sequence alignment with a bounded cost (difflib on untrusted, attacker-sized sequences).

``difflib.SequenceMatcher`` (``autojunk=False``) costs, per longest-match search, the number of
equal element pairs between the two sequences: two 20 000-character paragraphs of one repeated
letter take about half a minute, and a deck can hold hundreds of them. These helpers run
SequenceMatcher unchanged when that pair count is within ``budget`` (so ordinary inputs get exactly
difflib's answer); beyond it they align the common prefix and suffix and run SequenceMatcher on the
differing middle only if that fits the budget, else (for text) align the middle word by word, else
treat the middle as one replaced block. The
result is then a valid but possibly coarser alignment (fewer matches), never a slower one.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Hashable, Sequence

DEFAULT_BUDGET = 1_000_000  # equal-element pairs per comparison (well under a second in the worst case)

Opcode = tuple[str, int, int, int, int]
_TOKEN = re.compile(r"\S+\s*|\s+")  # a word with its trailing blanks


def pair_cost(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Number of (i, j) with ``a[i] == b[j]``: the work of one SequenceMatcher longest-match search."""
    ca, cb = Counter(a), Counter(b)
    if len(ca) > len(cb):
        ca, cb = cb, ca
    return sum(n * cb.get(k, 0) for k, n in ca.items())


def _common_ends(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[int, int]:
    n = min(len(a), len(b))
    p = 0
    while p < n and a[p] == b[p]:
        p += 1
    s = 0
    while s < n - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    return p, s


def matching_blocks(
    a: Sequence[Hashable], b: Sequence[Hashable], budget: int = DEFAULT_BUDGET
) -> list[tuple[int, int, int]]:
    """(i, j, size) blocks of equal elements, increasing in i and j (no terminating dummy)."""
    if pair_cost(a, b) <= budget:
        blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        return [(m.a, m.b, m.size) for m in blocks if m.size]
    p, s = _common_ends(a, b)
    out = [(0, 0, p)] if p else []
    mid_a, mid_b = a[p : len(a) - s], b[p : len(b) - s]
    if mid_a and mid_b and pair_cost(mid_a, mid_b) <= budget:
        blocks = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False).get_matching_blocks()
        out += [(m.a + p, m.b + p, m.size) for m in blocks if m.size]
    elif mid_a and mid_b and isinstance(mid_a, str) and isinstance(mid_b, str):
        out += [(i + p, j + p, n) for i, j, n in _word_blocks(mid_a, mid_b, budget)]
    if s:
        out.append((len(a) - s, len(b) - s, s))
    return out


def _word_blocks(a: str, b: str, budget: int) -> list[tuple[int, int, int]]:
    """Character blocks from aligning words (long texts whose characters are too costly to align)."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    if pair_cost(ta, tb) > budget:
        return []
    offsets_a, offsets_b = [0], [0]
    for tok in ta:
        offsets_a.append(offsets_a[-1] + len(tok))
    for tok in tb:
        offsets_b.append(offsets_b[-1] + len(tok))
    blocks = difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_matching_blocks()
    return [
        (offsets_a[m.a], offsets_b[m.b], offsets_a[m.a + m.size] - offsets_a[m.a]) for m in blocks if m.size
    ]


def opcodes(a: Sequence[Hashable], b: Sequence[Hashable], budget: int = DEFAULT_BUDGET) -> list[Opcode]:
    """SequenceMatcher-style opcodes (equal/replace/insert/delete) turning ``a`` into ``b``."""
    if pair_cost(a, b) <= budget:
        return [
            (str(op), i1, i2, j1, j2)
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        ]
    out: list[Opcode] = []
    i = j = 0
    for bi, bj, size in [*matching_blocks(a, b, budget), (len(a), len(b), 0)]:
        if i < bi and j < bj:
            out.append(("replace", i, bi, j, bj))
        elif i < bi:
            out.append(("delete", i, bi, j, j))
        elif j < bj:
            out.append(("insert", i, i, j, bj))
        if size:
            out.append(("equal", bi, bi + size, bj, bj + size))
        i, j = bi + size, bj + size
    return out


def ratio(a: Sequence[Hashable], b: Sequence[Hashable], budget: int = DEFAULT_BUDGET) -> float:
    """``2 * matches / (len(a) + len(b))`` as SequenceMatcher.ratio (1.0 for two empty sequences).

    Over budget the matches counted are those of a valid (coarser) alignment, so they never exceed
    the longest common subsequence: the ratio does not overstate how much the two have in common.
    """
    total = len(a) + len(b)
    if not total:
        return 1.0
    return 2.0 * sum(size for _, _, size in matching_blocks(a, b, budget)) / total


__all__ = ["DEFAULT_BUDGET", "matching_blocks", "opcodes", "pair_cost", "ratio"]
