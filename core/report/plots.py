"""Inline SVG plots for the HTML report (no plotting library): score histograms per agent and judge."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


def bin_counts(values: Sequence[float], bins: int = 10) -> list[int]:
    """Counts of scores in ``bins`` equal bins over [0, 1]; 1.0 falls in the last bin."""
    counts = [0] * bins
    for v in values:
        x = min(max(float(v), 0.0), 1.0)
        counts[min(int(x * bins), bins - 1)] += 1
    return counts


def histogram_rows_svg(
    title: str,
    series: Mapping[str, Sequence[float]],
    bins: int = 10,
    means: Mapping[str, tuple[float | None, Sequence[float] | None]] | None = None,
) -> str:
    """One SVG: a histogram row per agent (same x axis 0-1, bar height ∝ share of that agent's scores).

    Each row shows n, the mean (a dark tick) and the count above each non-empty bar. With
    ``means`` (agent → (mean, 95% interval) from summary.json) the row shows that mean and draws
    its interval as a whisker.
    """
    left, right, row_h, top, bottom = 150, 20, 70, 28, 30
    plot_w = 420
    width = left + plot_w + right
    height = top + row_h * max(1, len(series)) + bottom
    esc = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(title)}" font-family="sans-serif" font-size="12">',
        f'<text x="4" y="16" font-weight="bold" font-size="13">{esc(title)}</text>',
    ]
    bar_w = plot_w / bins
    for i, (name, values) in enumerate(series.items()):
        y0 = top + i * row_h
        base = y0 + row_h - 14
        counts = bin_counts(values, bins)
        peak = max(counts) or 1
        colour = PALETTE[i % len(PALETTE)]
        n = len(values)
        mean = sum(values) / n if n else None
        ci = None
        if means and name in means and means[name][0] is not None:
            mean, ci = means[name]
        label = f"{name[:18]}"
        parts.append(f'<text x="{left - 8}" y="{base - 22}" text-anchor="end">{esc(label)}</text>')
        stats = f"n={n}" + (f" mean={mean:.2f}" if mean is not None else "")
        if ci:
            stats += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
        parts.append(
            f'<text x="{left - 8}" y="{base - 6}" text-anchor="end" fill="#555" font-size="11">{stats}</text>'
        )
        parts.append(f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" stroke="#999"/>')
        for b, c in enumerate(counts):
            if not c:
                continue
            h = (row_h - 30) * c / peak
            x = left + b * bar_w
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{base - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{colour}">'
                f"<title>{esc(name)}: {c} score(s) in "
                f"[{b / bins:.1f}, {(b + 1) / bins:.1f}{']' if b == bins - 1 else ')'}</title></rect>"
            )
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{base - h - 3:.1f}" '
                f'text-anchor="middle" font-size="10">{c}</text>'
            )
        if mean is not None:
            mx = left + mean * plot_w
            parts.append(
                f'<line x1="{mx:.1f}" y1="{base - (row_h - 26)}" x2="{mx:.1f}" y2="{base + 4}" '
                'stroke="#222" stroke-width="2"/>'
            )
            if ci:
                lo, hi = (left + min(max(float(v), 0.0), 1.0) * plot_w for v in ci)
                wy = base + 8
                parts.append(
                    f'<path d="M{lo:.1f} {wy - 3} v6 M{lo:.1f} {wy} H{hi:.1f} M{hi:.1f} {wy - 3} v6" '
                    'stroke="#222" '
                    f'fill="none"><title>95% interval {ci[0]:.3f} to {ci[1]:.3f}</title></path>'
                )
    axis_y = top + row_h * max(1, len(series)) + 2
    for t in range(0, 11, 2):
        x = left + plot_w * t / 10
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y + 12}" text-anchor="middle" fill="#555" font-size="10">'
            f"{t / 10:.1f}</text>"
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{axis_y + 26}" '
        'text-anchor="middle" fill="#555" font-size="10">score</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def score_bar(score: float | None, width: int = 80) -> str:
    """A tiny inline SVG bar for a 0-1 score (empty frame when None)."""
    frac = 0.0 if score is None else min(max(float(score), 0.0), 1.0)
    colour = "#59a14f" if frac >= 0.999 else ("#edc948" if frac >= 0.5 else "#e15759")
    return (
        f'<svg class="bar" width="{width}" height="10" viewBox="0 0 {width} 10">'
        f'<rect width="{width}" height="10" fill="#eee"/>'
        f'<rect width="{frac * width:.1f}" height="10" fill="{colour}"/></svg>'
    )
