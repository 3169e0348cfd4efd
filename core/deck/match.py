"""Matching slides and shapes between two deck summaries.

Slides are matched by ``sld_id`` first, then (for slides whose ids were regenerated, e.g. by a
LibreOffice round trip) by content: identical text fingerprints first, then the best token-set
similarity above a threshold. Shapes are matched by id (same element type), then by unique name,
then by a geometry/text similarity score. Everything is linear or n·log n except the final
similarity pass, which only runs on the (usually tiny) leftovers and is capped.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

SIMILARITY_THRESHOLD = 0.5
MAX_SIMILARITY_PAIRS = 40_000  # leftover pairs compared exhaustively; beyond that we stop pairing
_WORD = re.compile(r"\w+", re.UNICODE)

# shape kinds that are the same XML element type (a p:sp can change between these)
_SP_KINDS = {"text_box", "autoshape", "freeform", "placeholder"}


def lis_indices(seq: Sequence[int]) -> set[int]:
    """Positions in ``seq`` that belong to one longest strictly increasing subsequence (n log n)."""
    tails: list[int] = []
    tails_pos: list[int] = []
    prev = [-1] * len(seq)
    for i, value in enumerate(seq):
        j = bisect.bisect_left(tails, value)
        if j == len(tails):
            tails.append(value)
            tails_pos.append(i)
        else:
            tails[j] = value
            tails_pos[j] = i
        prev[i] = tails_pos[j - 1] if j > 0 else -1
    keep: set[int] = set()
    k = tails_pos[-1] if tails_pos else -1
    while k >= 0:
        keep.add(k)
        k = prev[k]
    return keep


def _all_text(shapes: list[dict[str, Any]]) -> list[str]:
    out = []
    for shape in shapes:
        if shape.get("text"):
            out.append(shape["text"])
        table = shape.get("table")
        if table:
            out.extend(c.get("text", "") for row in table.get("cells", []) for c in row)
        if shape.get("children"):
            out.extend(_all_text(shape["children"]))
        smart = shape.get("smartart")
        if smart:
            out.extend(smart.get("texts", []))
    return out


def slide_tokens(slide: dict[str, Any]) -> frozenset[str]:
    """Words, shape names and kinds of a slide: its content fingerprint for similarity matching."""
    tokens: set[str] = set()
    for text in _all_text(slide.get("shapes", [])):
        tokens.update(w.lower() for w in _WORD.findall(text))
    for shape in slide.get("shapes", []):
        tokens.add("#kind:" + str(shape.get("kind")))
        tokens.add("#name:" + str(shape.get("name")))
    if slide.get("notes"):
        tokens.update("#note:" + w.lower() for w in _WORD.findall(slide["notes"]))
    tokens.add("#layout:" + str(slide.get("layout")))
    return frozenset(tokens)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _greedy_pairs(left: list[int], right: list[int], score, threshold: float) -> list[tuple[int, int]]:
    if not left or not right or len(left) * len(right) > MAX_SIMILARITY_PAIRS:
        return []
    scored = []
    for i in left:
        for j in right:
            s = score(i, j)
            if s >= threshold:
                scored.append((-s, abs(i - j), i, j))
    scored.sort()
    used_l: set[int] = set()
    used_r: set[int] = set()
    out = []
    for _neg, _dist, i, j in scored:
        if i in used_l or j in used_r:
            continue
        used_l.add(i)
        used_r.add(j)
        out.append((i, j))
    return out


def match_slides(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[int, int]:
    """0-based index map A -> B of matched slides."""
    pairs: dict[int, int] = {}
    b_by_id: dict[Any, int] = {}
    for j, slide in enumerate(b):
        b_by_id.setdefault(slide.get("sld_id"), j)
    used_b: set[int] = set()
    for i, slide in enumerate(a):
        hit = b_by_id.get(slide.get("sld_id"))
        if hit is not None and hit not in used_b:
            pairs[i] = hit
            used_b.add(hit)
    left = [i for i in range(len(a)) if i not in pairs]
    right = [j for j in range(len(b)) if j not in used_b]
    if not left or not right:
        return pairs
    tokens_a = {i: slide_tokens(a[i]) for i in left}
    tokens_b = {j: slide_tokens(b[j]) for j in right}
    # identical fingerprints pair up in order
    by_fp: dict[frozenset[str], list[int]] = {}
    for j in right:
        by_fp.setdefault(tokens_b[j], []).append(j)
    still_left = []
    for i in left:
        bucket = by_fp.get(tokens_a[i])
        if bucket:
            j = bucket.pop(0)
            pairs[i] = j
            used_b.add(j)
        else:
            still_left.append(i)
    right = [j for j in right if j not in used_b]
    for i, j in _greedy_pairs(
        still_left, right, lambda i, j: jaccard(tokens_a[i], tokens_b[j]), SIMILARITY_THRESHOLD
    ):
        pairs[i] = j
    return pairs


def _shape_tag(kind: Any) -> str:
    return "sp" if kind in _SP_KINDS else str(kind)


def _shape_similarity(a: dict[str, Any], b: dict[str, Any]) -> float:
    if _shape_tag(a.get("kind")) != _shape_tag(b.get("kind")):
        return 0.0
    score = 0.2
    if a.get("name") == b.get("name"):
        score += 0.3
    if a.get("text") and a.get("text") == b.get("text"):
        score += 0.3
    elif a.get("text") or b.get("text"):
        ta = set(_WORD.findall((a.get("text") or "").lower()))
        tb = set(_WORD.findall((b.get("text") or "").lower()))
        score += 0.3 * jaccard(frozenset(ta), frozenset(tb))
    else:
        score += 0.15
    if (a.get("x"), a.get("y")) == (b.get("x"), b.get("y")):
        score += 0.1
    if (a.get("cx"), a.get("cy")) == (b.get("cx"), b.get("cy")):
        score += 0.1
    if a.get("picture") and a.get("picture") == b.get("picture"):
        score += 0.2
    return score


def match_shapes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[int, int]:
    """0-based index map A -> B of matched shapes at one level of the tree."""
    pairs: dict[int, int] = {}
    used_b: set[int] = set()
    b_by_id: dict[tuple[Any, str], int] = {}
    for j, shape in enumerate(b):
        if shape.get("id") is not None:
            b_by_id.setdefault((shape["id"], _shape_tag(shape.get("kind"))), j)
    for i, shape in enumerate(a):
        hit = b_by_id.get((shape.get("id"), _shape_tag(shape.get("kind"))))
        if hit is not None and hit not in used_b:
            pairs[i] = hit
            used_b.add(hit)
    left = [i for i in range(len(a)) if i not in pairs]
    if not left:
        return pairs
    right = [j for j in range(len(b)) if j not in used_b]
    names_b: dict[tuple[Any, str], list[int]] = {}
    for j in right:
        names_b.setdefault((b[j].get("name"), _shape_tag(b[j].get("kind"))), []).append(j)
    names_a: dict[tuple[Any, str], list[int]] = {}
    for i in left:
        names_a.setdefault((a[i].get("name"), _shape_tag(a[i].get("kind"))), []).append(i)
    for key, idxs in names_a.items():
        cands = names_b.get(key)
        if cands and len(cands) == 1 and len(idxs) == 1:
            pairs[idxs[0]] = cands[0]
            used_b.add(cands[0])
    left = [i for i in left if i not in pairs]
    right = [j for j in right if j not in used_b]
    for i, j in _greedy_pairs(left, right, lambda i, j: _shape_similarity(a[i], b[j]), 0.6):
        pairs[i] = j
    return pairs
