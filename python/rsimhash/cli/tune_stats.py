"""The measures of ``rsimhash tune`` on a sample of texts, without printing.

* ``truth_pairs``: every pair of shingle sets at least a Jaccard threshold
  alike, exactly. A prefix filter proposes the pairs: with the shingles of
  every set ordered rarest first (one order for all sets), two sets with
  ``J >= t`` share a shingle among the first ``|A| - ceil(t |A|) + 1`` of
  ``A`` and the first ``|B| - ceil(t |B|) + 1`` of ``B`` (Chaudhuri, Ganti
  and Kaushik, ICDE 2006), so a pair sharing none is below ``t``, and rare
  shingles keep the lists short. Proposed pairs are cut by the size bound
  ``min/max >= t`` and verified by ``pair_similarity``, in double precision,
  as ``similar_pairs`` keeps them (``>= t``). Two empty sets are alike (1).
* ``curve``: for one fingerprint mode, the pairs within ``k`` bits and the
  true pairs among them for ``k = 0..max_k``: one ``batch.find_all`` at
  ``max_k`` and the pairs' distances, since a pair within ``k`` is within
  every larger one.
* ``leading_bits``: where the highest 1-bit of the XOR of neighbouring
  sorted fingerprints falls (0 = the most significant bit, 64 = equal
  neighbours), the paper's Figure 2, against random fingerprints.
* ``index_bytes``, ``verify_cost``: what a design and verified candidates
  cost, measured on the sample.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

# (mode, width) of the fingerprints measured: the two plain modes, and single
# words, the automatic candidates of verified near-duplicates.
MODES: Tuple[Tuple[str, int], ...] = (("words", 3), ("chars", 4), ("words", 1))
TARGETS = (0.95, 0.97, 0.99)
EPS = 1e-9  # slack for t * size in floating point: a longer prefix only adds candidates


@dataclass
class Truth:
    """The exact answer on the sample: ``pairs`` (P, 2) sample positions,
    smaller first, rows sorted, and their similarity."""

    pairs: np.ndarray
    similarity: np.ndarray
    checked: int  # pairs whose sets were compared


@dataclass
class Curve:
    """Plain simhash of one mode against the truth, for ``k = 0..max_k``."""

    mode: str
    width: int
    found: List[int]  # pairs within k bits
    true: List[int]  # true pairs within k bits
    truth: int  # true pairs in all
    n: int  # documents

    def precision(self, k: int) -> Optional[float]:
        return self.true[k] / self.found[k] if self.found[k] else None

    def recall(self, k: int) -> Optional[float]:
        return self.true[k] / self.truth if self.truth else None

    def f1(self, k: int) -> Optional[float]:
        p, r = self.precision(k), self.recall(k)
        if p is None or r is None or p + r == 0:
            return None
        return 2 * p * r / (p + r)

    @property
    def name(self) -> str:
        return f"{self.mode},{self.width}"

    def rows(self) -> List[Dict[str, Any]]:
        return [
            dict(
                mode=self.mode,
                width=self.width,
                k=k,
                found=self.found[k],
                true=self.true[k],
                precision=self.precision(k),
                recall=self.recall(k),
                f1=self.f1(k),
            )
            for k in range(len(self.found))
        ]


@dataclass
class Verified:
    """The least ``k`` of each candidate mode whose candidates reach a recall."""

    target: float
    options: List[Tuple[Curve, int]] = field(default_factory=list)  # (mode, its least k), reached only
    seconds: Optional[float] = None  # similar_pairs on the sample, for the chosen one
    recall_measured: Optional[float] = None  # of its verified pairs against the truth
    bytes_per_doc: Optional[float] = None  # what it holds a document (sets and fingerprints)

    @property
    def chosen(self) -> Optional[Tuple[Curve, int]]:
        """The least k; of equal k, the fewest candidate pairs."""
        if not self.options:
            return None
        return min(self.options, key=lambda o: (o[1], o[0].found[o[1]]))


# -- the truth -----------------------------------------------------------------------


def truth_pairs(offsets: np.ndarray, hashes: np.ndarray, threshold: float) -> Truth:
    """Every pair of sets at least ``threshold`` alike (Jaccard), exactly."""
    from .. import _rsimhash

    sizes = np.diff(offsets)
    empty = np.flatnonzero(sizes == 0).astype(np.uint64)
    candidates = _prefix_candidates(offsets, hashes, sizes, threshold)
    a, b = candidates // len(sizes), candidates % len(sizes)
    small, large = np.minimum(sizes[a], sizes[b]), np.maximum(sizes[a], sizes[b])
    keep = small >= threshold * large - EPS
    a, b = a[keep].astype(np.uint64), b[keep].astype(np.uint64)
    flat = np.stack([a, b], axis=1).reshape(-1)
    sims = _rsimhash.pair_similarity(offsets, hashes, np.ascontiguousarray(flat)) if len(a) else np.zeros(0)
    ok = sims >= threshold
    ea, eb = _all_pairs(len(empty))
    pairs = np.concatenate([np.stack([a[ok], b[ok]], axis=1), np.stack([empty[ea], empty[eb]], axis=1)])
    sims = np.concatenate([sims[ok], np.ones(len(ea))])
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return Truth(pairs[order].reshape(-1, 2), sims[order], checked=int(len(a)) + len(ea))


def _prefix_candidates(offsets: np.ndarray, hashes: np.ndarray, sizes: np.ndarray, t: float) -> np.ndarray:
    """Pairs ``a < b`` of non-empty sets sharing a shingle of their prefixes,
    as ``a * n + b``, ascending and distinct."""
    n = len(sizes)
    if not len(hashes):
        return np.zeros(0, dtype=np.int64)
    uniq, inverse, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.lexsort((uniq, counts))] = np.arange(len(uniq))  # rarest first
    owner = np.repeat(np.arange(n), sizes)
    elements = rank[inverse.reshape(-1)]
    order = np.lexsort((elements, owner))  # each set's shingles, rarest first
    position = np.arange(len(hashes)) - offsets[:-1][owner]
    prefix = np.clip(sizes - np.ceil(t * sizes - EPS).astype(np.int64) + 1, 1, None)
    keep = position < prefix[owner]
    tokens, sets = elements[order][keep], owner[keep]
    by_token = np.lexsort((sets, tokens))
    tokens, sets = tokens[by_token], sets[by_token]
    first, second = _pairs_in_groups(tokens)
    return np.unique(sets[first].astype(np.int64) * n + sets[second])


def _pairs_in_groups(keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Indices ``(i, j)``, ``i < j``, of every two entries of a sorted array
    with equal keys."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    end_of = np.repeat(ends, ends - starts)
    later = end_of - np.arange(len(keys)) - 1  # partners after each entry in its group
    first = np.repeat(np.arange(len(keys)), later)
    block = np.cumsum(later) - later
    second = first + 1 + (np.arange(len(first)) - np.repeat(block, later))
    return first, second


def _all_pairs(n: int) -> Tuple[np.ndarray, np.ndarray]:
    a, b = np.triu_indices(n, k=1)
    return a.astype(np.int64), b.astype(np.int64)


# -- plain simhash -------------------------------------------------------------------


def curve(fps: np.ndarray, truth: Truth, mode: str, width: int, max_k: int, threads: Optional[int]) -> Curve:
    """Pairs within each k and true pairs among them."""
    from .. import batch, hamming

    found = batch.find_all(fps, k=max_k, threads=threads, progress=False)
    assert isinstance(found, np.ndarray)
    dist = hamming(fps[found[:, 0]], fps[found[:, 1]]) if len(found) else np.zeros(0, dtype=np.uint8)
    tp = truth.pairs
    tdist = hamming(fps[tp[:, 0]], fps[tp[:, 1]]) if len(tp) else np.zeros(0, dtype=np.uint8)
    tdist = tdist[tdist <= max_k]
    return Curve(
        mode,
        width,
        found=np.cumsum(np.bincount(dist, minlength=max_k + 1)).tolist(),
        true=np.cumsum(np.bincount(tdist, minlength=max_k + 1)).tolist(),
        truth=len(tp),
        n=len(fps),
    )


def best_plain(curves: Sequence[Curve]) -> Optional[Tuple[Curve, int]]:
    """The mode and k of the best F1 (of equal F1, the smaller k)."""
    scored = [(c.f1(k), -k, c, k) for c in curves for k in range(len(c.found)) if c.f1(k) is not None]
    if not scored:
        return None
    best = max(scored, key=lambda s: (s[0], s[1]))
    return best[2], best[3]


def verified_options(curves: Sequence[Curve], target: float) -> Verified:
    """For each mode, the least k whose candidates reach ``target`` recall."""
    v = Verified(target)
    for c in curves:
        k = next((k for k in range(len(c.found)) if (c.recall(k) or 0) >= target), None)
        if k is not None:
            v.options.append((c, k))
    return v


def verify_cost(
    v: Verified, texts: List[str], truth: Truth, threshold: float, shingles: str, width: int, threads: Optional[int]
) -> None:
    """Runs the verified pairs of ``v``'s chosen candidates on the sample
    (what ``similar_pairs`` does): seconds, recall, bytes held a document."""
    from ..similar import SimilarCorpus

    chosen = v.chosen
    if chosen is None or not texts:
        return
    c, k = chosen
    start = time.perf_counter()
    corpus = SimilarCorpus(threshold, shingles=shingles, width=width, candidates=(c.mode, c.width, k))
    corpus.add(texts, threads=threads)
    pairs, _ = corpus.pairs(threads=threads, progress=False)
    v.seconds = time.perf_counter() - start
    v.bytes_per_doc = corpus.nbytes / len(texts)
    if len(truth.pairs):
        got = set(map(tuple, pairs.tolist()))
        v.recall_measured = sum(1 for p in map(tuple, truth.pairs.tolist()) if p in got) / len(truth.pairs)


@dataclass
class Exact:
    """The exact join (``similar_pairs(..., candidates="exact")``) run on the sample."""

    seconds: float
    pairs: int
    recall_measured: Optional[float]  # against the truth: 1 by construction
    bytes_per_doc: float  # the sets held a document (the join's work comes on top)


def exact_cost(
    texts: List[str], truth: Truth, threshold: float, shingles: str, width: int, threads: Optional[int]
) -> Optional[Exact]:
    """Runs the exact join on the sample, as ``verify_cost`` runs the candidates'."""
    from ..similar import SimilarCorpus

    if not texts:
        return None
    start = time.perf_counter()
    corpus = SimilarCorpus(threshold, shingles=shingles, width=width, candidates="exact")
    corpus.add(texts, threads=threads)
    pairs, _ = corpus.pairs(threads=threads, progress=False)
    seconds = time.perf_counter() - start
    recall = None
    if len(truth.pairs):
        got = set(map(tuple, pairs.tolist()))
        recall = sum(1 for p in map(tuple, truth.pairs.tolist()) if p in got) / len(truth.pairs)
    return Exact(seconds, len(pairs), recall, corpus.nbytes / len(texts))


# -- designs and memory --------------------------------------------------------------


def design(n: int, k: int) -> Tuple[int, str]:
    """``(tables, description)`` of the batch engine's design for ``n`` items."""
    from .. import _rsimhash

    return _rsimhash.batch_design(max(n, 1), k=k)


def index_bytes(n: int, k: int, tables: int, seed: int = 0) -> float:
    """Bytes of an ``Index(k, tables=tables)`` of ``n`` items, extrapolated
    from one of ``min(n, 100,000)`` random fingerprints (compressed tables
    take fewer bytes an item as they grow: an upper bound beyond)."""
    from .. import Index

    m = max(1, min(n, 100_000))
    fps = np.random.default_rng(seed).integers(0, 2**64 - 1, size=m, dtype=np.uint64, endpoint=True)
    index = Index(k, tables=tables)
    index.add(fps)
    index.query(0)  # builds the tables
    return float(index.nbytes) / m * n


# -- leading bits of neighbours ------------------------------------------------------


def leading_bits(fps: np.ndarray) -> np.ndarray:
    """Histogram (65 counts) of the position of the highest 1-bit of the XOR
    of neighbouring sorted fingerprints: 0 is the most significant bit, 63
    the least, 64 equal neighbours."""
    s = np.sort(np.asarray(fps, dtype=np.uint64))
    x = s[1:] ^ s[:-1]
    top = np.zeros(len(x), dtype=np.int64)  # index of the highest set bit, counted from bit 0
    for shift in (32, 16, 8, 4, 2, 1):
        high = x >= np.uint64(1 << shift)
        top += shift * high
        x = np.where(high, x >> np.uint64(shift), x)
    position = np.where(x > 0, 63 - top, 64)
    return np.bincount(position, minlength=65)


def random_leading_bits(n: int, seed: int) -> np.ndarray:
    """``leading_bits`` of ``n`` uniformly random fingerprints (seeded)."""
    rng = np.random.default_rng(seed)
    return leading_bits(rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True))


def median_position(hist: np.ndarray) -> Optional[int]:
    total = int(hist.sum())
    if not total:
        return None
    return int(np.searchsorted(np.cumsum(hist), (total + 1) / 2))
