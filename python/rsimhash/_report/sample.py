"""A sample of the matches across the whole distance range.

Exact copies usually outnumber everything else, so a uniform sample would
show copies only. The matches are cut into strata, each Hamming distance
its own (``0..64``), or in verified runs ten equal bins of similarity from
the threshold up to 1 and the exact copies (similarity 1) apart; each
stratum gets an equal share of the sample, a stratum with fewer matches
than its share gives the rest to the others. So the borderline pairs (at
distance ``k``, or just above the threshold) are there whenever the run
found any.

The sample comes back interleaved across strata (the first of each stratum,
then the second of each, ...): a page that stops adding pairs at its size
budget still shows every stratum. Time is linear in the matches
(``argsort`` of small ints is a radix sort), the choice is reproducible
from ``seed``.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

SIMILARITY_BINS = 10


def strata(
    distance: Optional[np.ndarray], similarity: Optional[np.ndarray], threshold: Optional[float]
) -> Tuple[np.ndarray, int]:
    """``(stratum of each match, number of strata)``."""
    if similarity is not None:
        low = float(threshold) if threshold is not None else (float(similarity.min()) if len(similarity) else 0.0)
        low = min(low, float(similarity.min())) if len(similarity) else low
        width = max(1.0 - low, 1e-9) / SIMILARITY_BINS
        bins = np.clip(((similarity.astype(np.float64) - low) / width).astype(np.int64), 0, SIMILARITY_BINS - 1)
        bins[similarity >= 1] = SIMILARITY_BINS  # exact copies (of their shingle sets)
        return bins.astype(np.int16), SIMILARITY_BINS + 1
    assert distance is not None
    return np.clip(distance, 0, 64).astype(np.int16), 65


def quotas(sizes: np.ndarray, n: int) -> np.ndarray:
    """Equal shares of ``n`` among strata of ``sizes``, capped by each size,
    what a small stratum cannot take going to the others (water filling)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    share = np.zeros(len(sizes), np.int64)
    left = min(int(n), int(sizes.sum()))
    open_ = sizes > 0
    while left > 0 and open_.any():
        each = max(1, left // int(open_.sum()))
        for s in np.flatnonzero(open_).tolist():
            give = min(each, int(sizes[s] - share[s]), left)
            share[s] += give
            left -= give
            if share[s] == sizes[s]:
                open_[s] = False
            if left == 0:
                break
    return share


def choose(
    distance: Optional[np.ndarray], similarity: Optional[np.ndarray], threshold: Optional[float], n: int, seed: int = 0
) -> np.ndarray:
    """Indices of ``n`` matches (or all, when fewer), stratified and interleaved."""
    stratum, count = strata(distance, similarity, threshold)
    order = np.argsort(stratum, kind="stable")
    sizes = np.bincount(stratum, minlength=count)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    rng = np.random.default_rng(seed)
    picked = []
    for s, q in enumerate(quotas(sizes, n).tolist()):
        if q:
            members = order[starts[s] : starts[s + 1]]
            chosen = np.sort(rng.choice(members, q, replace=False))  # in output order within a stratum
            picked.append(chosen)
    if not picked:
        return np.zeros(0, np.int64)
    # Interleave: rank within stratum first, then stratum.
    rank = np.concatenate([np.arange(len(p)) for p in picked])
    which = np.concatenate([np.full(len(p), i) for i, p in enumerate(picked)])
    return np.concatenate(picked)[np.lexsort((which, rank))].astype(np.int64)
