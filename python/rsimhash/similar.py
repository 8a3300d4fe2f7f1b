"""Verified near-duplicates: pairs of texts whose shingle sets are at least a
threshold alike, for users who think in Jaccard similarity.

A 64-bit simhash within ``k = 3`` bits finds only very close copies. Here
simhash proposes candidates at a wider ``k`` (on single words by default,
which an edit moves less than 3-word shingles), and each candidate is
confirmed by the exact similarity of the two texts' shingle sets: the sets
of SPEC v1 shingles of ``shingles``/``width``, identified by their FNV-1a 64
hashes. Every pair reported is alike by construction (precision 1); the
pairs missed are those the candidates missed.

* ``measure="jaccard"``: ``|A & B| / |A | B|``.
* ``measure="containment"``: ``|A & B| / min(|A|, |B|)``, how much of the
  shorter text the longer one holds.

Two empty sets are alike (similarity 1); an empty set and another share
nothing (0).

``candidates="auto"`` takes, for each threshold, the least ``k`` that found
97 % of the pairs at or above it on a real-text corpus of 24,877 documents
in 25 languages (``rsimhash._rsimhash.auto_candidates(t)`` says which):
``k = 7`` at 0.9, ``k = 10`` at 0.8, ``k = 12`` at 0.7. ``rsimhash tune``
measures the same on a sample of your corpus; pass what it recommends as
``candidates=(mode, width, k)``.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from . import _rsimhash, _texts

__all__ = ["jaccard", "shingles", "similar_pairs"]

CandidatesArg = Union[str, Tuple[str, int, int]]  # "auto", "exact" or (mode, width, k)


def similar_pairs(
    texts: Any,
    threshold: float = 0.9,
    *,
    shingles: str = "words",
    width: Optional[int] = 3,
    candidates: CandidatesArg = "auto",
    ids: Any = None,
    measure: str = "jaccard",
    threads: Optional[int] = None,
    progress: Any = None,
    copies: str = "all",
    nulls: str = "error",
) -> Tuple[np.ndarray, np.ndarray]:
    """Every pair of texts whose shingle sets are at least ``threshold``
    alike, among the candidates: ``(pairs, similarity)``, a ``(P, 2)``
    array (positions, or ``ids``: smaller first, rows sorted) and a
    ``float32`` array.

    ``ids``: one distinct id per text, non-negative ints (a list, an array
    of any integer dtype, a pandas Index: pairs are then ``uint64``) or
    strings (pairs are then a numpy object array of ``str``); an id given
    twice is a ``ValueError``. A pandas Series without ``ids=`` gives its
    index labels. ``nulls``: a missing text (None, NaN, null) is a
    ``TypeError`` naming its position (``"error"``), or never pairs
    (``"keep"`` and ``"drop"``: the pairs of the other texts, at their
    positions in ``texts``).

    Copies (texts with the same candidate fingerprint and shingle set, such
    as the same page saved twice) are alike with similarity 1 and are
    checked once: ``copies="all"`` lists every pair of them (``c`` copies
    make ``c (c - 1) / 2``, refused with a ``MemoryError`` before they are
    made when they would not fit in memory), ``copies="first"`` pairs each
    copy only with the first copy of its text.

    ``texts``: a list, tuple, numpy object array or iterable of ``str``, a
    pandas or polars Series, or a pyarrow string array (read in place).
    A text's set holds the FNV-1a 64 hashes of its SPEC v1 shingles of
    ``shingles`` (``"words"`` or ``"chars"``) and ``width`` (3 in either
    mode unless given: pass ``width=4`` for the character 4-grams that
    ``fingerprints`` and ``dedup(jaccard=, mode="chars")`` default to).
    ``candidates``: ``"exact"``, every pair at least ``threshold`` alike
    by the exact set-similarity join (prefix filter, AllPairs/PPJoin:
    recall 1); ``(mode, width, k)``, the pairs of fingerprints of that mode
    and width within ``k`` bits, each checked; ``"auto"`` (the default),
    exact here, where every set is held in memory (the beyond-memory jobs
    of ``rsimhash.batch`` take the simhash candidates).
    ``progress``: as in
    ``rsimhash.batch`` (a bar on a terminal by default).

    >>> pairs, sim = rsimhash.similar_pairs(
    ...     ["the cat sat on the mat today", "the cat sat on the mat today!", "dogs bark"], 0.9)
    >>> pairs.tolist(), sim.tolist()
    ([[0, 1]], [1.0])
    """
    if copies not in ("all", "first"):
        raise ValueError(f'copies must be "all" or "first", got {copies!r}')
    from . import _ids, _nulls

    ids = series_labels(texts) if ids is None else ids
    if ids is not None and not hasattr(texts, "__len__"):
        texts = list(texts)  # an iterable, counted against the ids
    present, missing = _nulls.split(texts, nulls)
    keys = None if ids is None else _ids.user_ids(ids, len(texts))
    corpus = SimilarCorpus(threshold, shingles=shingles, width=width, candidates=candidates, measure=measure)
    corpus.add(present, threads=threads)
    pairs, sims = corpus.pairs(threads=threads, progress=progress, copies=copies)
    if missing is not None:  # positions among the present texts, back to positions in texts
        pairs = np.flatnonzero(~missing).astype(np.uint64)[pairs] if len(pairs) else pairs
    if keys is not None:
        pairs, sims = _by_ids(pairs, sims, keys)
    return pairs, sims


def series_labels(texts: Any) -> Any:
    """A pandas Series' index labels, when they are not its positions: the
    ids its pairs are named by (None otherwise)."""
    if _texts.kind(texts) == "pandas" and not _is_positions(texts.index):
        return texts.index
    return None


def _is_positions(index: Any) -> bool:
    """Whether a pandas index is 0, 1, 2, ... (its labels are the positions)."""
    return type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1


def jaccard(a: str, b: str, *, shingles: str = "words", width: Optional[int] = 3, measure: str = "jaccard") -> float:
    """The exact similarity of two texts' shingle sets (SPEC v1 shingles of
    ``shingles``/``width``, as ``rsimhash.shingles`` gives them): ``|A & B| /
    |A | B|`` for ``measure="jaccard"``, ``|A & B| / min(|A|, |B|)`` for
    ``"containment"``. The number ``similar_pairs``, ``SimilarIndex`` and
    ``dedup(jaccard=)`` report for the pair (they report it as a
    ``float32``). Two empty sets are alike (1), an empty set and another not (0).

    >>> rsimhash.jaccard("a b c d e", "a b c d f")  # 2 of 4 word 3-shingles
    0.5
    >>> rsimhash.jaccard("a b c", "a b c d e f", measure="containment")
    1.0
    """
    for name, text in (("a", a), ("b", b)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    check_shingles(shingles)
    offsets, hashes = _rsimhash.shingle_sets([a, b], mode=shingles, width=width)
    pair = np.array([0, 1], dtype=np.uint64)
    return float(_rsimhash.pair_similarity(offsets, hashes, pair, measure=measure)[0])


def check_shingles(shingles: Any) -> None:
    """A ``ValueError`` naming ``shingles`` (the core names its ``mode``)."""
    if shingles not in ("words", "chars"):
        raise ValueError(f'shingles must be "words" or "chars", got {shingles!r}')


def shingles(text: str, *, mode: str = "words", width: Optional[int] = None) -> np.ndarray:
    """The shingle set of one text: the distinct FNV-1a 64 hashes of its SPEC
    v1 shingles (``mode`` ``"words"``: tokens joined by single spaces, width
    3 by default; ``"chars"``: windows of the normalized text, width 4), as
    a sorted ``uint64`` array.

    >>> rsimhash.shingles("A b, a B") == np.unique([rsimhash.fnv1a64(s) for s in ("a b a", "b a b")])
    array([ True,  True])
    """
    offsets, hashes = _rsimhash.shingle_sets([text], mode=mode, width=width)
    return hashes


class SimilarCorpus:
    """Texts gathered for verified near-duplicates a chunk at a time (each
    text's candidate fingerprint and shingle set are made as it is added,
    about 8 bytes a distinct shingle), then all their pairs, the dedup or
    the clusters. ``similar_pairs`` and ``dedup(..., jaccard=)`` use it; the
    command line adds its records chunk by chunk."""

    def __init__(
        self,
        threshold: float,
        *,
        shingles: str = "words",
        width: Optional[int] = 3,
        candidates: CandidatesArg = "auto",
        measure: str = "jaccard",
    ):
        check_shingles(shingles)
        exact = join_is_exact(candidates)
        self._core = _rsimhash.SimilarCorpus(
            _threshold(threshold),
            measure=measure,
            shingles=shingles,
            width=width,
            candidates=None if exact else candidates_arg(candidates),
            exact=exact,
        )

    def add(self, texts: Any, *, threads: Optional[int] = None) -> None:
        for piece in _texts.pieces(texts):
            self._core.add(piece.core() if isinstance(piece, _texts.ArrowBuffers) else piece, threads=threads)

    def pairs(self, *, threads: Optional[int] = None, progress: Any = None, copies: str = "all") -> Tuple[np.ndarray, np.ndarray]:
        return _with_bars(progress, "similar pairs", lambda bars: self._core.pairs(threads=threads, progress=bars, copies=copies))

    def dedup(
        self, *, threads: Optional[int] = None, progress: Any = None
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(keep, dropped, matched, similarity)``: the keep mask in the order
        added, the positions dropped, the earliest kept text each matched and
        their similarity."""
        return _with_bars(progress, "dedup", lambda bars: self._core.dedup(threads=threads, progress=bars))

    def clusters(
        self, *, method: str = "connected", min_size: int = 2, threads: Optional[int] = None, progress: Any = None
    ) -> Tuple[np.ndarray, np.ndarray]:
        """``(members, starts)``: positions of each cluster's texts, cluster by cluster."""
        return _with_bars(
            progress,
            "clusters",
            lambda bars: self._core.clusters(method=method, min_size=min_size, threads=threads, progress=bars),
        )

    @property
    def candidates(self) -> Tuple[str, int, int]:
        """The candidates' ``(mode, width, k)``."""
        return self._core.candidates

    @property
    def exact(self) -> bool:
        """Whether the pairs come from the exact join."""
        return self._core.exact

    @property
    def nbytes(self) -> int:
        return self._core.nbytes

    def __len__(self) -> int:
        return len(self._core)


def join_is_exact(candidates: CandidatesArg) -> bool:
    """Whether a job that holds every set in memory takes the exact join:
    for ``"exact"`` and ``"auto"``; a ``(mode, width, k)`` is checked."""
    if isinstance(candidates, str) and candidates in ("exact", "auto"):
        return True
    candidates_arg(candidates)
    return False


def candidates_arg(candidates: CandidatesArg) -> Optional[Tuple[str, Optional[int], int]]:
    """``None`` for ``"auto"`` (and ``"exact"``, where a job cannot take
    the exact join: the automatic candidates), else a checked ``(mode,
    width, k)``."""
    if isinstance(candidates, str):
        if candidates not in ("auto", "exact"):
            raise ValueError(f'candidates must be "auto", "exact" or a (mode, width, k) tuple, got {candidates!r}')
        return None
    try:
        mode, width, k = candidates
    except (TypeError, ValueError):
        raise TypeError(f'candidates must be "auto" or a (mode, width, k) tuple, got {candidates!r}') from None
    for name, value in (("width", width), ("k", k)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise TypeError(f"the candidates' {name} must be an int, got {type(value).__name__}")
    if not isinstance(mode, str):
        raise TypeError(f'the candidates\' mode must be "words" or "chars", got {type(mode).__name__}')
    return mode, None if width is None else int(width), int(k)


def _threshold(threshold: Any) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise TypeError(f"threshold must be a number in (0, 1], got {type(threshold).__name__}")
    return float(threshold)


def _with_bars(progress: Any, desc: str, job: Any) -> Any:
    from ._progress import Bars

    bars = Bars(progress, desc)
    try:
        return job(bars)
    finally:
        bars.close()


def _ids(ids: Any, n: int) -> np.ndarray:
    """``ids`` of ``n`` texts as ``uint64``: non-negative ints of any kind, distinct."""
    from . import _ids as ids_module

    return ids_module.int_ids(ids, n)


def _by_ids(pairs: np.ndarray, sims: np.ndarray, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Pairs of positions as pairs of ids, smaller first, rows sorted."""
    a, b = ids[pairs[:, 0].astype(np.intp)], ids[pairs[:, 1].astype(np.intp)]
    if ids.dtype == object:  # strings: compared as Python compares them
        rows = sorted(zip((min(x, y) for x, y in zip(a, b)), (max(x, y) for x, y in zip(a, b)), sims.tolist()))
        out = np.empty((len(rows), 2), dtype=object)
        for i, (x, y, _) in enumerate(rows):
            out[i, 0], out[i, 1] = x, y
        return out, np.array([r[2] for r in rows], dtype=np.float32)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((hi, lo))
    return np.stack([lo[order], hi[order]], axis=1).reshape(-1, 2), sims[order]
