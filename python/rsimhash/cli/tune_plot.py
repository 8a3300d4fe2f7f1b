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
    figure = module("matplotlib.figure").Figure(figsize=(13, 5.2), dpi=100, layout="constrained")
    module("matplotlib.backends.backend_agg").FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    _precision_recall(left, curves, threshold)
    _leading_bits(right, xor, random_xor)
    figure.suptitle(title, fontsize=11)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _precision_recall(ax: Any, curves: Sequence[Curve], threshold: float) -> None:
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
        for r, p, k in points:
            ax.annotate(str(k), (r, p), textcoords="offset points", xytext=(4, 3), fontsize=7, color=color)
    ax.set_xlim(-0.02, 1.05)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel(f"recall (pairs with Jaccard >= {threshold:g})")
    ax.set_ylabel("precision")
    ax.set_title("plain simhash at k = 0, 1, ... bits (labels: k)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)


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
