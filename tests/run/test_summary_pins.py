"""summary.json's figures are pinned (issue 25): every mean, interval, p-value, pass@k and pass^k of
seeded synthetic runs and of a demo run equals what the statistics engine computed before it was
made faster (tests/support/summary_pin_rows.py describes the cases; the pins were recorded at commit fb660a0).
"""

from __future__ import annotations

import json

import pytest

from tests.support.summary_pin_rows import BIG_CASE, FIXTURES, PINS, bench_rows, cases, summary_of

PINNED = json.loads(PINS.read_text(encoding="utf-8"))


def differences(want, got, path="") -> list[str]:
    """Where two JSON values differ (first few), for a readable failure."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}/{k}: missing" for k in want if k not in got]
        out += [f"{path}/{k}: unexpected" for k in got if k not in want]
        for k in want:
            if k in got:
                out += differences(want[k], got[k], f"{path}/{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [
            d
            for i, (w, g) in enumerate(zip(want, got, strict=True))
            for d in differences(w, g, f"{path}[{i}]")
        ]
    return [] if want == got and type(want) is type(got) else [f"{path}: pinned {want!r}, now {got!r}"]


SLOW_CASES = {
    "close_26000_pairs",
    "close_4000_pairs_seed5",
    "bench_4000_pairs",
}  # several seconds; the fast lane (-m "not slow") keeps the other cases


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CASES else n for n in sorted(cases())]
)
def test_summary_equals_the_pinned_figures(name):
    make, opts = cases()[name]
    got = summary_of(make(), **opts)
    assert differences(PINNED[name], got)[:20] == []


def test_the_pins_cover_the_engine_paths():
    """The cases reach what they are meant to: an exact and Monte Carlo p-values near 0.5 and in the
    tail, several epochs, intervals off, more tasks than the draw cache held."""
    p = {
        name: [c["p_value"] for j in s.get("comparisons", {}).values() for c in j.values()]
        for name, s in PINNED.items()
    }
    assert any(0.2 < x < 0.8 for x in p["close_900_pairs"]) and any(
        0.05 < x < 0.95 for x in p["close_26000_pairs"]
    )
    assert max(p["demo"]) < 0.001 and min(p["epochs"]) < 0.001  # exact (12 tasks) and Monte Carlo tails
    epochs = PINNED["epochs"]["agents"]["agent0"]["judges"]["j1"]["epochs"]
    assert epochs["k"] == 3 and epochs["pass_at_k"]["3"]["ci95"] is not None
    assert PINNED["epochs_no_intervals"]["agents"]["agent0"]["judges"]["j1"]["mean_ci95"] is None
    assert PINNED["close_26000_pairs"]["agents"]["noop"]["tasks"] == 13_000  # > 12,000: past the old cache


@pytest.mark.slow
def test_summary_of_100000_pairs_equals_the_pinned_figures():
    want = json.loads((FIXTURES / "summary_pins_100k.json").read_text(encoding="utf-8"))
    assert differences(want, summary_of(bench_rows(100_000)))[:20] == [], BIG_CASE
