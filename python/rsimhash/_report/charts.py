"""The page's charts: inline SVG drawn here, no library, no script.

Each chart is a ``<figure>``: the SVG (bars are ``rect.bar``, points
``circle.dot``, each with a ``<title>`` a pointer or screen reader shows and
``data-`` attributes holding its value), a caption, and the same numbers as
a table folded under it. Colours come from the page's CSS classes, so the
charts follow its light or dark scheme. A chart's size does not depend on
the corpus: a bar per distance (at most 65), per similarity bin (20), per
cluster size present (a log-log scatter), per shard (at most ``MAX_SHARDS``).
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .markup import attr, count, cut, text

W, H = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 44
MAX_SHARDS = 60


def _log_scale(values: Sequence[int]) -> bool:
    nonzero = [v for v in values if v > 0]
    return bool(nonzero) and max(nonzero) / min(nonzero) > 50


def _y(value: float, top: float, log: bool) -> float:
    """Height fraction of ``value`` on an axis up to ``top``."""
    if value <= 0:
        return 0.0
    if log:
        return math.log10(value + 1) / math.log10(top + 1)
    return value / top


def _y_ticks(top: int, log: bool) -> List[int]:
    if top <= 0:
        return [0]
    if log:
        return [10**e for e in range(0, int(math.log10(top)) + 1)]
    step = 10 ** max(0, int(math.log10(top)))
    if top / step < 3:
        step = max(1, step // 2)
    return list(range(0, top + 1, step))


def _figure(svg: str, caption: str, table: str, ident: str) -> str:
    return (
        f'<figure class="chart" id="{attr(ident)}">{svg}<figcaption>{caption}</figcaption>'
        f'<details class="numbers"><summary>the numbers</summary>{table}</details></figure>'
    )


def _table(head: Tuple[str, str], rows: Sequence[Tuple[str, str]]) -> str:
    body = "".join(f"<tr><td>{text(a)}</td><td>{text(b)}</td></tr>" for a, b in rows)
    return f"<table><thead><tr><th>{text(head[0])}</th><th>{text(head[1])}</th></tr></thead><tbody>{body}</tbody></table>"


def bars(
    labels: Sequence[str],
    counts: Sequence[int],
    *,
    ident: str,
    title: str,
    x_label: str,
    unit: str,
    marked: Sequence[int] = (),
    marker: str = "",
    x_values: Optional[Sequence[str]] = None,
    tick_every: int = 1,
) -> str:
    """A histogram: one ``rect.bar`` per label; ``marked`` bars get the accent
    colour (the threshold); ``x_values`` go to the bars' ``data-x``."""
    n = len(labels)
    log = _log_scale(counts)
    top = max(list(counts) + [1])
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    slot = plot_w / max(n, 1)
    parts = [f'<svg class="plot" viewBox="0 0 {W} {H}" role="img" aria-label="{attr(title)}" xmlns="http://www.w3.org/2000/svg">']
    for t in _y_ticks(top, log):
        y = TOP + plot_h * (1 - _y(t, top, log))
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{count(t)}</text>'
        )
    for i, (label, c) in enumerate(zip(labels, counts)):
        h = plot_h * _y(c, top, log)
        if c > 0:
            h = max(h, 1.5)  # a bar of one is still seen
        x = LEFT + i * slot + slot * 0.12
        cls = "bar marked" if i in marked else "bar"
        data_x = x_values[i] if x_values is not None else label
        parts.append(
            f'<rect class="{cls}" x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{slot * 0.76:.1f}" '
            f'height="{h:.1f}" data-x="{attr(data_x)}" data-count="{c}">'
            f"<title>{text(x_label)} {text(label)}: {count(c)} {text(unit)}</title></rect>"
        )
        if i in marked:  # the threshold: a dashed line at its bar's right edge, seen when the bar is empty too
            edge = LEFT + (i + 1) * slot
            parts.append(
                f'<line class="k" x1="{edge:.1f}" x2="{edge:.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>'
                f'<text class="label" x="{edge - 4:.1f}" y="{TOP + 12}" text-anchor="end">{text(marker)}</text>'
            )
        if i % tick_every == 0 or i in marked:
            parts.append(
                f'<text class="tick" x="{LEFT + (i + 0.5) * slot:.1f}" y="{H - BOTTOM + 16}" '
                f'text-anchor="middle">{text(label)}</text>'
            )
    parts.append(
        f'<line class="axis" x1="{LEFT}" x2="{W - RIGHT}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>'
        f'<text class="label" x="{LEFT + plot_w / 2:.0f}" y="{H - 6}" text-anchor="middle">'
        f"{text(x_label)}</text>"
        f'<text class="label" x="14" y="{TOP + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.0f})">{text(unit)}{" (log scale)" if log else ""}'
        "</text></svg>"
    )
    caption = text(title)
    return _figure("".join(parts), caption, _table((x_label, unit), [(lb, count(c)) for lb, c in zip(labels, counts)]), ident)


def hamming(distance: np.ndarray, k: Optional[int], *, unit: str, title: str) -> str:
    """Histogram of Hamming distances, 0 up to the largest (or ``k``), ``k`` marked."""
    top = int(distance.max()) if len(distance) else 0
    if k is not None:
        top = max(top, k)
    counts = np.bincount(np.clip(distance, 0, 64).astype(np.int64), minlength=top + 1)[: top + 1]
    labels = [str(d) for d in range(top + 1)]
    marked = [k] if k is not None and k <= top else []
    return bars(
        labels,
        counts.tolist(),
        ident="chart-hamming",
        title=title,
        x_label="distance (bits)",
        unit=unit,
        marked=marked,
        marker=f"k = {k}",
        tick_every=1 if top <= 32 else 4,
    )


def similarity(values: np.ndarray, threshold: Optional[float], measure: str, *, unit: str, title: str, bins: int = 20) -> str:
    """Histogram of similarities in ``bins`` equal bins from the threshold (or the least) to 1."""
    low = threshold if threshold is not None else (float(values.min()) if len(values) else 0.0)
    if len(values):
        low = min(low, float(values.min()))
    low = math.floor(low * 100) / 100
    width = max(1.0 - low, 0.01) / bins
    idx = (
        np.clip(((values.astype(np.float64) - low) / width).astype(np.int64), 0, bins - 1)
        if len(values)
        else np.zeros(0, np.int64)
    )
    counts = np.bincount(idx, minlength=bins)[:bins]
    labels = [f"{low + i * width:.3f}" for i in range(bins)]
    return bars(
        labels, counts.tolist(), ident="chart-similarity", title=title, x_label=f"{measure} (bin from)", unit=unit, tick_every=4
    )


def _log_ticks(top: float) -> List[int]:
    """1, 10, 100, ... up to ``top``; with 1, 2, 5 of each decade when there are few."""
    decades = int(math.log10(top)) + 1
    steps = (1, 2, 5) if decades <= 2 else (1,)
    ticks = [m * 10**e for e in range(decades) for m in steps if m * 10**e <= top]
    if decades == 1 and int(top) not in ticks:  # a short axis: its end is labelled too
        ticks.append(int(top))
    return ticks


def sizes_loglog(sizes: np.ndarray, *, what: str) -> str:
    """Number of groups of each size, log-log: one ``circle.dot`` per size present."""
    values, counts = np.unique(sizes, return_counts=True) if len(sizes) else (np.zeros(0, np.int64),) * 2
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    x_top = max(2.0, float(values.max()) if len(values) else 2.0)
    y_top = max(1.0, float(counts.max()) if len(counts) else 1.0)
    lx, ly = math.log10(x_top) * 1.05 or 1.0, math.log10(y_top) * 1.1 or 1.0
    parts = [
        f'<svg class="plot" viewBox="0 0 {W} {H}" role="img" aria-label="{attr(what)} sizes, log-log" '
        f'xmlns="http://www.w3.org/2000/svg">'
    ]
    for t in _log_ticks(y_top):
        y = TOP + plot_h * (1 - math.log10(t) / ly)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{count(t)}</text>'
        )
    for t in _log_ticks(x_top):
        x = LEFT + plot_w * (math.log10(t) / lx)
        parts.append(
            f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>'
            f'<text class="tick" x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{count(t)}</text>'
        )
    for s, c in zip(values.tolist(), counts.tolist()):
        x = LEFT + plot_w * (math.log10(s) / lx)
        y = TOP + plot_h * (1 - math.log10(c) / ly)
        parts.append(
            f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="4" data-size="{s}" data-count="{c}">'
            f"<title>{count(c)} {text(what)} of {count(s)} records</title></circle>"
        )
    parts.append(
        f'<line class="axis" x1="{LEFT}" x2="{W - RIGHT}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>'
        f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}"/>'
        f'<text class="label" x="{LEFT + plot_w / 2:.0f}" y="{H - 6}" text-anchor="middle">'
        f"records in a group (log scale)</text>"
        f'<text class="label" x="14" y="{TOP + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.0f})">{text(what)} (log scale)</text></svg>'
    )
    rows = [(count(s), count(c)) for s, c in zip(values.tolist(), counts.tolist())]
    return _figure("".join(parts), text(f"Sizes of the {what}, log-log"), _table(("records", what), rows), "chart-sizes")


def shards(names: Sequence[str], records: Sequence[int], flagged: Sequence[int], *, what: str) -> str:
    """Share of each shard's records that ``what`` (removed, in a pair, ...), one bar per shard."""
    rows = list(zip(names, records, flagged))
    more = len(rows) - MAX_SHARDS
    if more > 0:  # the shards with the highest shares
        rows = sorted(rows, key=lambda r: -(r[2] / r[1] if r[1] else 0))[:MAX_SHARDS]
    label_w, bar_h = 200, 18
    height = TOP + bar_h * len(rows) + 30
    plot_w = W - label_w - 70
    parts = [
        f'<svg class="plot" viewBox="0 0 {W} {height}" role="img" aria-label="share {attr(what)} by shard" '
        f'xmlns="http://www.w3.org/2000/svg">'
    ]
    for i, (name, n, f) in enumerate(rows):
        share = f / n if n else 0.0
        y = TOP + i * bar_h
        parts.append(
            f'<text class="tick" x="{label_w - 6}" y="{y + 13}" text-anchor="end">{text(cut(name, 30))}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{max(plot_w * share, 1.5 if f else 0):.1f}" '
            f'height="{bar_h - 4}" data-x="{attr(name)}" data-count="{f}">'
            f"<title>{text(name)}: {count(f)} of {count(n)} records ({share:.1%})</title></rect>"
            f'<text class="tick" x="{label_w + plot_w * share + 6:.1f}" y="{y + 13}">{share:.1%}</text>'
        )
    parts.append(
        f'<text class="label" x="{label_w + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle">'
        f"share of the shard's records {text(what)}</text></svg>"
    )
    table = _table(("shard", f"{what} / records"), [(nm, f"{count(f)} / {count(n)}") for nm, n, f in rows])
    note = f" ({more:,} more shards not drawn)" if more > 0 else ""
    return _figure("".join(parts), text(f"Share of each input shard's records {what}{note}"), table, "chart-shards")
