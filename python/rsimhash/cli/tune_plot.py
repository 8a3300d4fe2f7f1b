"""The figures of ``rsimhash tune --plot FILE.png``: one PNG, two panels.

Left, the paper's Figure 1 for this corpus: precision against recall of
plain simhash at ``k = 0..max_k`` bits, one line per fingerprint mode, each
point labelled with its k. Right, its Figure 2: the share of neighbouring
sorted fingerprints whose XOR has its highest 1-bit at each position (0 the
most significant bit, 64 for equal neighbours), for each mode and for as
many uniformly random fingerprints; near-duplicates show as mass at the low
end (far right), a skewed corpus as a shift from the random curve.

matplotlib is optional (``pip install "rsimhash[plot]"``); only its
object-oriented API is used (no pyplot, no global backend), so drawing works
without a display and leaves the caller's matplotlib state alone.
"""

from __future__ import annotations

import io
from typing import Any, Sequence

import numpy as np

from .._optional import module
from .errors import UsageError
from .tune_stats import Curve

INSTALL = 'pip install "rsimhash[plot]"'
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


def require() -> None:
    """Raises a ``UsageError`` naming the extra when matplotlib is missing."""
    try:
        module("matplotlib")
        module("matplotlib.figure")
        module("matplotlib.backends.backend_agg")
    except ImportError:
        raise UsageError(f"--plot needs matplotlib, which is not installed; install it with: {INSTALL}") from None


def png(curves: Sequence[Curve], xor: "dict[str, np.ndarray]", random_xor: np.ndarray, threshold: float, title: str) -> bytes:
    """The two panels as PNG bytes."""
    buffer = io.BytesIO()
    figure(curves, xor, random_xor, threshold, title).savefig(buffer, format="png")
    return buffer.getvalue()


def figure(curves: Sequence[Curve], xor: "dict[str, np.ndarray]", random_xor: np.ndarray, threshold: float, title: str) -> Any:
    """The two panels, drawn (a matplotlib ``Figure`` on an Agg canvas)."""
    fig = module("matplotlib.figure").Figure(figsize=(13, 5.2), dpi=100, layout="constrained")
    module("matplotlib.backends.backend_agg").FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    _leading_bits(right, xor, random_xor)
    fig.suptitle(title, fontsize=11)
    labels = _precision_recall(left, curves, threshold)
    fig.canvas.draw()  # the layout settles the axes: labels are placed in their final pixels
    _label_points(left, labels)
    fig.canvas.draw()
    return fig


def _precision_recall(ax: Any, curves: Sequence[Curve], threshold: float) -> list:
    """The curves; returns the k labels ``(recall, precision, k, color)``
    for ``_label_points`` to place once the axes are laid out."""
    every: list = []
    labels: list = []
    for color, c in zip(COLORS, curves):
        points = [(c.recall(k), c.precision(k), k) for k in range(len(c.found))]
        points = [(r, p, k) for r, p, k in points if r is not None and p is not None]
        if not points:
            continue
        ax.plot(
            [r for r, _, _ in points],
            [p for _, p, _ in points],
            "o-",
            color=color,
            markersize=4,
            label=f"{c.mode}, width {c.width}",
        )
        every += points
        labels += [(r, p, k, color) for r, p, k in points]
    # Axes fitted to the points (a corpus's points often lie between 0.85 and 1).
    ax.set_xlim(*_span([r for r, _, _ in every]))
    ax.set_ylim(*_span([p for _, p, _ in every]))
    ax.set_xlabel(f"recall (pairs with Jaccard >= {threshold:g})")
    ax.set_ylabel("precision")
    ax.set_title("plain simhash at k = 0, 1, ... bits (labels: k)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    return labels


def _span(values: Sequence[float]) -> "tuple[float, float]":
    """Limits that hold ``values`` with a margin: at least 0.05 wide, within -0.02..1.05."""
    if not values:
        return -0.02, 1.05
    lo, hi = min(values), max(values)
    pad = max(0.05, hi - lo) * 0.08
    return max(-0.02, lo - pad), min(1.05, hi + pad)


# Where a k label may go around its point, in points (tried in order).
OFFSETS = [(4, 3), (4, -10), (-11, 3), (-11, -10), (0, 8), (0, -14), (8, -3), (-15, -3)]
OFFSETS += [(10, 10), (-16, 10), (10, -16), (-16, -16)]


def _label_points(ax: Any, labels: list) -> None:
    """Each point's k beside it where it overlaps no label placed before
    (tried around the point in ``OFFSETS`` order); a k that fits nowhere is
    left out rather than drawn over another (its neighbours on the line say
    it)."""
    renderer = ax.figure.canvas.get_renderer()
    placed: list = []
    for r, p, k, color in labels:
        for dx, dy in OFFSETS:
            text = ax.annotate(str(k), (r, p), textcoords="offset points", xytext=(dx, dy), fontsize=7, color=color)
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(b) for b in placed):
                placed.append(box)
                break
            text.remove()


def _leading_bits(ax: Any, xor: "dict[str, np.ndarray]", random_xor: np.ndarray) -> None:
    positions = np.arange(65)
    for color, (name, hist) in zip(COLORS, xor.items()):
        ax.plot(positions, _share(hist), "-", color=color, linewidth=1.2, label=name)
    ax.plot(positions, _share(random_xor), "--", color="black", linewidth=1.2, label="random fingerprints")
    ax.set_xlabel("position of the leading 1-bit of XOR of sorted neighbours (0 = top bit, 64 = equal)")
    ax.set_ylabel("share of neighbours")
    ax.set_title("spread of the fingerprints (paper's Figure 2)", fontsize=10)
    ax.set_xlim(0, 64)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)


def _share(hist: np.ndarray) -> np.ndarray:
    total = hist.sum()
    return hist / total if total else hist.astype(np.float64)
