"""The batch jobs of similar pairs: ``similar_pairs``, ``similar_dedup``
and ``similar_clusters``, simhash candidates confirmed by the exact
similarity of their shingle sets, in two passes over the texts; or, where
every set fits ``memory_limit`` (``candidates="exact"``, and ``"auto"``
when they fit), the exact set-similarity join of ``rsimhash.similar_pairs``
over the sets held in memory, in one pass."""

from __future__ import annotations

import logging
from contextlib import ExitStack
from typing import Any, Optional, Tuple

import numpy as np

from .. import _rsimhash as _core
from ._job import Memory, Progress, _id_labels, _in_id_order, _Job

log = logging.getLogger("rsimhash.batch")


def similar_pairs(
    texts: Any,
    threshold: float = 0.9,
    *,
    shingles: str = "words",
    width: Optional[int] = 3,
    candidates: Any = "auto",
    measure: str = "jaccard",
    ids: Any = None,
    column: str = "text",
    memory_limit: Memory = None,
    workdir: Any = None,
    threads: Optional[int] = None,
    progress: Progress = None,
    copies: str = "all",
    max_record_mb: float = 256,
) -> Tuple[np.ndarray, np.ndarray]:
    """Every pair of texts whose shingle sets are at least ``threshold``
    alike among the candidates, as ``rsimhash.similar_pairs`` finds them
    (the same pairs and values): ``(pairs, similarity)``, a ``(P, 2)``
    ``uint64`` array (positions, or ``ids``; smaller first, rows sorted)
    and a ``float32`` array. Only the pairs found are held in memory.

    ``texts``: a column in memory (list, numpy, pandas, polars or pyarrow),
    a path (``str`` or ``os.PathLike``) or a list of ``os.PathLike`` paths
    of JSON lines (maybe gzip or zstd) or Parquet files whose ``column``
    holds the text, or a function returning a fresh iterable of chunks of
    texts each time it is called (once for the exact join, twice for the
    candidates, three times when ``"auto"`` turns to them). Texts given again
    (the same bytes) are checked once; ``copies`` as in
    ``rsimhash.similar_pairs``. A line of a file longer than
    ``max_record_mb`` MiB is a ``ValueError`` naming it (it is never read
    into memory).

    ``candidates``: ``"exact"`` holds every text's shingle set and finds
    every pair by the exact join (recall 1), in one pass; when the sets
    and the join's work (about 3.5 times the sets' bytes) would pass
    ``memory_limit`` it is a ``MemoryError`` naming the memory needed
    (the input is read to its end to count it). ``"auto"`` takes the exact
    join where it fits and the simhash candidates' two passes where it does
    not (the texts read until the sets passed the limit are read again);
    the progress bar's title and an ``INFO`` record of the
    ``rsimhash.batch`` logger say which it took. ``(mode, width, k)``:
    those candidates, two passes.

    >>> texts = ["the cat sat on the mat today", "the cat sat on the mat today!", "dogs bark"]
    >>> pairs, sim = rsimhash.batch.similar_pairs(texts, 0.9)
    >>> pairs.tolist(), sim.tolist()
    ([[0, 1]], [1.0])
    """
    if copies not in ("all", "first"):
        raise ValueError(f'copies must be "all" or "first", got {copies!r}')
    from ..similar import series_labels

    ids = series_labels(texts) if ids is None else ids
    held = _exact_join(
        texts,
        threshold,
        shingles,
        width,
        candidates,
        measure,
        column,
        memory_limit,
        threads,
        max_record_mb,
        progress,
        "similar_pairs",
    )
    if held is not None:
        corpus, bars = held
        with bars:
            pairs, sims = corpus.pairs(threads=threads, progress=bars.bars, copies=copies)
        if ids is not None:
            from .._ids import user_ids
            from ..similar import _by_ids

            return _by_ids(pairs, sims, user_ids(ids, len(corpus)))
        return pairs, sims
    found: list = []

    def each(higher: np.ndarray, lower: np.ndarray, sims: np.ndarray, *_: Any) -> None:
        if len(higher):
            found.append((higher, lower, sims))

    expand: list = []
    n = _verified(
        texts,
        threshold,
        each,
        shingles=shingles,
        width=width,
        candidates=candidates,
        measure=measure,
        column=column,
        memory_limit=memory_limit,
        workdir=workdir,
        threads=threads,
        progress=progress,
        desc="similar_pairs",
        on_pairs=lambda two: expand.append(two),
        max_record_mb=max_record_mb,
    )
    hi = np.concatenate([f[0] for f in found]) if found else np.empty(0, np.uint64)
    lo = np.concatenate([f[1] for f in found]) if found else np.empty(0, np.uint64)
    sims = np.concatenate([f[2] for f in found]) if found else np.empty(0, np.float32)
    pairs, sims = expand[0](lo, hi, sims, copies)
    if ids is not None:
        from .._ids import user_ids
        from ..similar import _by_ids

        return _by_ids(pairs, sims, user_ids(ids, n))
    return pairs, sims


def similar_dedup(
    texts: Any,
    threshold: float = 0.9,
    *,
    shingles: str = "words",
    width: Optional[int] = 3,
    candidates: Any = "auto",
    measure: str = "jaccard",
    column: str = "text",
    memory_limit: Memory = None,
    workdir: Any = None,
    threads: Optional[int] = None,
    progress: Progress = None,
    return_matched: bool = False,
    max_record_mb: float = 256,
) -> Any:
    """The keep mask of the verified dedup: ``False`` exactly for each text
    at least ``threshold`` alike a text kept before it, among the
    candidates (the answer of ``rsimhash.dedup(texts, jaccard=threshold)``).
    ``texts`` and ``candidates`` as in ``similar_pairs``. With ``return_matched=True``,
    ``(keep, matched, similarity)``: the earliest kept text each dropped
    one is alike (each kept text itself) and their similarity (1 when kept).

    >>> rsimhash.batch.similar_dedup(["a b c d e f g", "a b c d e f g h", "x y z"], 0.5).tolist()
    [True, False, True]
    """
    held = _exact_join(
        texts,
        threshold,
        shingles,
        width,
        candidates,
        measure,
        column,
        memory_limit,
        threads,
        max_record_mb,
        progress,
        "similar_dedup",
    )
    if held is not None:
        corpus, bars = held
        with bars:
            keep, dropped, matched_at, sims = corpus.dedup(threads=threads, progress=bars.bars)
        matched = np.arange(len(keep), dtype=np.uint64)
        similarity = np.ones(len(keep), dtype=np.float32)
        matched[dropped] = matched_at
        similarity[dropped] = sims
        return (keep, matched, similarity) if return_matched else keep
    drops: list = []

    def each(_h: Any, _l: Any, _s: Any, dropped: np.ndarray, matched: np.ndarray, sims: np.ndarray) -> None:
        if len(dropped):
            drops.append((dropped, matched, sims))

    n = _verified(
        texts,
        threshold,
        each,
        shingles=shingles,
        width=width,
        candidates=candidates,
        measure=measure,
        column=column,
        memory_limit=memory_limit,
        workdir=workdir,
        threads=threads,
        progress=progress,
        desc="similar_dedup",
        max_record_mb=max_record_mb,
    )
    keep = np.ones(n, dtype=bool)
    matched = np.arange(n, dtype=np.uint64)
    similarity = np.ones(n, dtype=np.float32)
    for d, m, sim in drops:
        keep[d] = False
        matched[d] = m
        similarity[d] = sim
    return (keep, matched, similarity) if return_matched else keep


def similar_clusters(
    texts: Any,
    threshold: float = 0.9,
    *,
    method: str = "connected",
    min_size: int = 2,
    shingles: str = "words",
    width: Optional[int] = 3,
    candidates: Any = "auto",
    measure: str = "jaccard",
    ids: Any = None,
    column: str = "text",
    memory_limit: Memory = None,
    workdir: Any = None,
    threads: Optional[int] = None,
    progress: Progress = None,
    max_record_mb: float = 256,
) -> Tuple[np.ndarray, np.ndarray]:
    """Clusters of texts linked by verified pairs, as ``(ids, labels)`` in the
    layout of ``clusters``: ``"connected"`` components of the alike pairs,
    or ``"leader"`` clusters of the verified dedup (each text joins the
    earliest kept text it is alike). ``texts`` and ``candidates`` as in
    ``similar_pairs``.

    >>> ids, labels = rsimhash.batch.similar_clusters(["a b c d e f g", "x y z", "a b c d e f g h"], 0.5)
    >>> ids.tolist(), labels.tolist()
    ([0, 2], [0, 0])
    """
    if isinstance(min_size, bool) or not isinstance(min_size, (int, np.integer)) or min_size < 1:
        raise ValueError(f"min_size must be an int of at least 1, got {min_size!r}")
    if method not in ("connected", "leader"):
        raise ValueError(f'method must be "connected" or "leader", got {method!r}')
    held = _exact_join(
        texts,
        threshold,
        shingles,
        width,
        candidates,
        measure,
        column,
        memory_limit,
        threads,
        max_record_mb,
        progress,
        "similar_clusters",
    )
    if held is not None:
        corpus, bars = held
        with bars:
            members, starts = corpus.clusters(method=method, min_size=int(min_size), threads=threads, progress=bars.bars)
        n = len(corpus)
        return _cluster_ids(texts, ids, members, starts, n)
    sweeps: list = []
    n = _verified(
        texts,
        threshold,
        None,
        shingles=shingles,
        width=width,
        candidates=candidates,
        measure=measure,
        column=column,
        memory_limit=memory_limit,
        workdir=workdir,
        threads=threads,
        progress=progress,
        desc="similar_clusters",
        sweep_out=sweeps,
        max_record_mb=max_record_mb,
    )
    members, starts = sweeps[0].clusters(method=method, min_size=int(min_size))
    return _cluster_ids(texts, ids, members, starts, n)


def _cluster_ids(texts: Any, ids: Any, members: np.ndarray, starts: np.ndarray, n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Clusters of positions as ``(ids, labels)`` by the texts' ids."""
    from ..similar import series_labels

    ids = series_labels(texts) if ids is None else ids
    if ids is None:
        return _id_labels(members, starts, None)
    from .._ids import ranked, user_ids

    id_arr = user_ids(ids, n)
    if id_arr.dtype != object:
        return _id_labels(*_in_id_order(members, starts, id_arr), id_arr)
    ranks, by_rank = ranked(id_arr, "ids")  # strings: ordered by their ranks
    member_ranks, labels = _id_labels(*_in_id_order(members, starts, ranks), ranks)
    return by_rank[member_ranks.astype(np.intp)], labels


def _verified(
    texts: Any,
    threshold: float,
    each: Any,
    *,
    shingles: str,
    width: Optional[int],
    candidates: Any,
    measure: str,
    column: str,
    memory_limit: Memory,
    workdir: Any,
    threads: Optional[int],
    progress: Progress,
    desc: str,
    sweep_out: Optional[list] = None,
    on_pairs: Any = None,
    max_record_mb: float = 256,
) -> int:
    """Both passes of a verified job; ``each`` gets each piece's
    ``TwoPass.verify`` answer, and ``on_pairs`` a function that makes the
    job's pairs whole (``TwoPass.all_pairs``, its links copied out). Returns
    the number of texts."""
    from .._similar_passes import Settings, TwoPass
    from ._texts_in import reader

    settings = Settings(threshold, measure=measure, shingles=shingles, width=width, candidates=candidates)
    read = reader(texts, column, max_record_mb)
    log.info("%s: %s", desc, _candidates_part(settings.candidates))
    with ExitStack() as stack:
        job = _Job(
            stack,
            k=settings.candidates[2],
            memory_limit=memory_limit,
            workdir=workdir,
            out=None,
            threads=threads,
            progress=progress,
            blocks=None,
            tables=None,
            spill=None,
            desc=f"{desc}: {_candidates_part(settings.candidates)}",
        )
        two = TwoPass(settings, job.spill_dir(), threads=threads)
        stack.callback(two.close)
        for piece in read():
            two.add(piece)
        two.candidates(job.kwargs)
        for piece in read():
            answer = two.verify(piece)
            if each is not None:
                each(*answer)
        two.check_done()
        if sweep_out is not None:
            sweep_out.append(two.sweep)
        if on_pairs is not None:
            links = np.array(two.links)
            on_pairs(
                lambda lo, hi, sims, copies: _core.expand_copies(
                    np.ascontiguousarray(lo, dtype=np.uint64),
                    np.ascontiguousarray(hi, dtype=np.uint64),
                    np.ascontiguousarray(sims, dtype=np.float32),
                    links,
                    copies=copies,
                )
            )
        return two.count


def _candidates_part(candidates: Tuple[str, Optional[int], int]) -> str:
    mode, width, k = candidates
    return f"simhash candidates ({mode} width {width} within {k} bits)"


class _Bars:
    """A job's progress bars, closed on the way out."""

    def __init__(self, progress: Progress, desc: str):
        from .._progress import Bars

        self.bars = Bars(progress, desc)

    def __enter__(self) -> "_Bars":
        return self

    def __exit__(self, *_: Any) -> None:
        self.bars.close()


def _exact_join(
    texts: Any,
    threshold: float,
    shingles: str,
    width: Optional[int],
    candidates: Any,
    measure: str,
    column: str,
    memory_limit: Memory,
    threads: Optional[int],
    max_record_mb: float,
    progress: Progress,
    desc: str,
) -> Optional[Tuple[Any, _Bars]]:
    """Every text's set in a ``SimilarCorpus`` of the exact join, with the
    job's progress bars, when ``candidates`` takes it (``"exact"``, or
    ``"auto"``) and the sets and the join's work fit ``memory_limit``;
    ``None`` for the candidates' two passes. ``"exact"`` that does not fit
    is a ``MemoryError`` naming the memory it needs."""
    from .._memory import JOIN_BYTES_PER_SET_BYTE, format_bytes
    from .._memory import memory_limit as _memory_limit
    from .._similar_passes import Settings, core_piece
    from ._texts_in import reader

    settings = Settings(threshold, measure=measure, shingles=shingles, width=width, candidates=candidates)
    if not settings.exact:
        return None
    limit = _memory_limit(memory_limit)
    corpus: Optional[_core.SimilarCorpus] = _core.SimilarCorpus(
        settings.threshold, measure=measure, shingles=shingles, width=width, exact=True
    )
    read = reader(texts, column, max_record_mb)
    seen, held_texts, per_text = 0, 0, 0.0
    for piece in read():
        seen += len(piece)
        if corpus is not None:
            corpus.add(core_piece(piece), threads=threads)
            held = corpus.nbytes
            if held * JOIN_BYTES_PER_SET_BYTE > limit:
                per_text, held_texts, corpus = held / max(1, len(corpus)), len(corpus), None
                if not settings.forced:
                    log.info("%s: the sets pass memory_limit after %d texts; simhash candidates instead", desc, held_texts)
                    return None
    if corpus is None:
        need = int(per_text * seen * JOIN_BYTES_PER_SET_BYTE)
        raise MemoryError(
            f'candidates="exact" holds every text\'s shingle set: about {format_bytes(need)} for these {seen} texts '
            f"(the sets, {format_bytes(int(per_text * seen))} as measured on the first {held_texts}, and the join's "
            f"work), more than memory_limit={format_bytes(limit)}: raise memory_limit, or take "
            f'candidates="auto" or (mode, width, k) for the simhash candidates\' two passes'
        )
    log.info("%s: exact join of %d texts' sets (%s held)", desc, len(corpus), format_bytes(corpus.nbytes))
    return corpus, _Bars(progress, f"{desc}: exact join")
