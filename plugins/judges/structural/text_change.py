"""Credit for a text edit, measured on the requested *change* rather than on the whole text.

A request that rewrites three words of a long paragraph is reproduced only when those words were
removed and the requested words inserted in their place. Comparing whole texts cannot tell: an
unchanged shape, or the same span rewritten with the wrong words, is still 98 % similar to the
target. So both texts are compared with the original, word by word:

* the **requested change** is the multiset of word removals ``("-", position, word)`` and insertions
  ``("+", position, word)`` that turn the original into the target (positions in the original);
* the **made change** is the same for original → prediction;
* ``credit = 1 − |requested △ made| / |requested|`` (clamped to [0, 1]), snapped to 1 when it
  reaches the tolerance. The tolerance is therefore relative to the size of the requested change.

Consequences: an unchanged text earns 0; the right span with the wrong words earns 0 (the
removals match, but the wrong insertions cancel them); unrelated text shares no insertions and
earns 0 whatever characters it has in common with the target; doing half of a two-paragraph
rewrite earns 0.5; doing the rewrite plus unrequested rewording elsewhere in the same text loses
in proportion to the extra words. Words are compared after NFKC normalisation and case folding;
punctuation marks are words of their own, and CJK ideographs/kana/hangul are one word each.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

from pptarena.deck.align import opcodes

MAX_CHARS = 20_000  # characters of each text compared (bounded cost on untrusted decks)
_TOKEN_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+|[^\w\s]|_+")


def words(text: Any) -> list[str]:
    """Normalised word tokens of ``text`` (None and non-strings count as empty/str())."""
    s = text if isinstance(text, str) else ("" if text is None else str(text))
    s = unicodedata.normalize("NFKC", s[:MAX_CHARS]).casefold()
    return _TOKEN_RE.findall(s)


def change(old: list[str], new: list[str]) -> Counter[tuple[str, int, str]]:
    """The word removals and insertions turning ``old`` into ``new`` (positions in ``old``)."""
    atoms: Counter[tuple[str, int, str]] = Counter()
    for op, i1, i2, j1, j2 in opcodes(old, new):
        if op == "equal":
            continue
        for i in range(i1, i2):
            atoms[("-", i, old[i])] += 1
        for j in range(j1, j2):
            atoms[("+", i1, new[j])] += 1
    return atoms


def change_credit(old: Any, new: Any, got: Any, tolerance: float) -> float:
    """How much of the change ``old → new`` the text ``got`` reproduces, in [0, 1].

    ``tolerance``: the credit at or above which the change counts as fully reproduced (0.95 lets
    one word in twenty of the requested change differ).
    """
    o, n, g = words(old), words(new), words(got)
    if g == n:
        return 1.0
    wanted = change(o, n)
    if not wanted:  # the requested change is invisible after normalising (case, spacing)
        return 0.0
    made = change(o, g)
    off = sum((wanted - made).values()) + sum((made - wanted).values())
    credit = max(0.0, 1.0 - off / sum(wanted.values()))
    return 1.0 if credit >= tolerance else credit


__all__ = ["change", "change_credit", "words"]
