"""Batch jobs over a whole corpus of fingerprints, in memory and beyond it.

``find_all``, ``clusters`` and ``dedup`` give the answers of
``Index.find_all``, ``Index.cluster`` and ``Index.add_unique`` for a whole
corpus at once, without an index: the Rust core works one permuted table at
a time (the paper's batch mode), sorting and scanning it for the pairs that
share the table's prefix, so a job holds 12 bytes per fingerprint of the
table in work whatever the number of tables. Under ``memory_limit`` a table
is worked in parts, spilled to ``workdir`` when that is cheaper than reading
the source again.

Sources: a 1-D ``uint64`` array (an ``np.memmap`` or ``np.load(...,
mmap_mode="r")`` array is read in place), a ``.npy`` file, a list of them or
a directory of them (concatenated in sorted name order), or Parquet files
with a fingerprint ``column`` (``uint64``, or ``int64`` holding the same
bits). Items are the positions ``0..N-1`` of the whole source unless
``ids`` gives each its own: ints of any kind or strings, given back in
the answers (strings as numpy object arrays).

Long jobs show a progress bar on a terminal (``progress=True`` always,
``False`` never, or a function called with ``(done, total, step,
step_done, step_total)``) and stop cleanly on Ctrl-C. ``total`` is set
when the job begins and never changes: the fingerprints times the job's
passes (one to read them, one per table); ``done`` only grows and ends
equal to it. ``step`` names the step under way (``"table 3 of 10"``,
``"table 3 of 10, part 2 of 4"``, ``"writing the pairs"``) and
``step_done``/``step_total`` count its items: fingerprints, or the pairs
it writes. With ``out=`` or
``workdir=``, a job killed midway and started again with the same arguments
resumes after the last table it finished; outputs are written under a
temporary name and renamed into place when complete.

Example::

    import numpy as np, rsimhash
    fps = np.load("fingerprints.npy", mmap_mode="r")
    pairs = rsimhash.batch.find_all(fps, k=3)              # (P, 2) uint64, sorted
    n = rsimhash.batch.find_all("fps/", k=3, out="pairs.npy", memory_limit="8GiB")
    keep = rsimhash.batch.dedup(fps, k=3)                   # bool mask
    ids, labels = rsimhash.batch.clusters(fps, k=3)         # cluster members

Verified near-duplicates (``similar_pairs``, ``similar_dedup``,
``similar_clusters``) take texts instead of fingerprints: a column in
memory, JSON lines or Parquet files, or a function that reads them in
chunks. They read the texts twice (fingerprints first, then the shingle
sets of the texts that candidates name), so memory
stays bounded for corpora larger than RAM::

    pairs, sim = rsimhash.batch.similar_pairs("corpus.jsonl", 0.9, memory_limit="4GiB")
    keep = rsimhash.batch.similar_dedup("corpus.parquet", 0.8, column="body")

A job on a directory of ``.npy`` files, its pairs written to a file:

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     os.mkdir(os.path.join(tmp, "fps"))
...     np.save(os.path.join(tmp, "fps", "part-0.npy"), np.array([0b1011, 1 << 40], dtype=np.uint64))
...     np.save(os.path.join(tmp, "fps", "part-1.npy"), np.array([0b1001, 0b1011], dtype=np.uint64))
...     n = rsimhash.batch.find_all(os.path.join(tmp, "fps"), k=1, out=os.path.join(tmp, "pairs.npy"), progress=False)
...     pairs = np.load(os.path.join(tmp, "pairs.npy"))
>>> n, pairs.tolist()
(3, [[0, 2], [0, 3], [2, 3]])
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import Any, Callable, Dict, Optional, Tuple, Union

import numpy as np

from .. import _files
from .. import _rsimhash as _core
from .._memory import memory_limit as _memory_limit
from .._memory import parse_memory
from .._progress import Bars
from ._outputs import Atomic, cluster_rows, pairs_npy_to_parquet, write_clusters
from ._sources import check_writable, parent_of, resolve

__all__ = ["clusters", "dedup", "find_all", "parse_memory", "similar_clusters", "similar_dedup", "similar_pairs"]

Progress = Union[None, bool, Callable[..., Any]]
Memory = Union[None, int, float, str]


class _Job:
    """Arguments shared by the three jobs, checked, and the resources they hold."""

    def __init__(
        self,
        stack: ExitStack,
        *,
        k: int,
        memory_limit: Memory,
        workdir: Any,
        out: Optional[str],
        threads: Optional[int],
        progress: Progress,
        blocks: Optional[int],
        tables: Optional[int],
        spill: Optional[bool],
        desc: str,
    ):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"k must be an int, got {type(k).__name__}")
        self.stack = stack
        self.limit = _memory_limit(memory_limit)
        self.out = out
        self.workdir = os.fspath(workdir) if workdir is not None else None
        self.temp_parent = parent_of(out)
        bars = Bars(progress, desc)
        stack.callback(bars.close)
        self.kwargs: Dict[str, Any] = dict(
            k=int(k),
            memory_limit=self.limit,
            workdir=self.workdir,
            temp_parent=self.temp_parent,
            threads=threads,
            blocks=blocks,
            tables=tables,
            spill=spill,
            progress=bars,
        )
        self._spill_dir: Optional[str] = None

    def check_ids(self, ids: Optional[np.ndarray]) -> None:
        """Ids given twice are an error (``find_all`` checks its own in the core)."""
        if ids is not None:
            _core.batch_check_ids(ids, memory_limit=self.limit, workdir=self.workdir, temp_parent=self.temp_parent)

    def spill_dir(self) -> str:
        """Where copies of Parquet columns go: a directory of the job's own
        (``rsimhash-spill-PID-...``, removed at the end) in the work
        directory, else beside ``out``, else in the system's temporary one.
        A work directory the job makes for this is removed too, if empty."""
        if self._spill_dir is None:
            parent = self.workdir if self.workdir is not None else self.temp_parent
            if parent is not None and not os.path.isdir(parent):
                os.makedirs(parent)
                self.stack.callback(_remove_if_empty, parent)
            self._spill_dir = _files.own_directory(parent, "rsimhash-spill-")
            self.stack.callback(_files.remove_directory, self._spill_dir)
        return self._spill_dir


def find_all(
    source: Any,
    k: int = 3,
    *,
    ids: Any = None,
    column: Optional[str] = None,
    out: Any = None,
    memory_limit: Memory = None,
    workdir: Any = None,
    threads: Optional[int] = None,
    progress: Progress = None,
    blocks: Optional[int] = None,
    tables: Optional[int] = None,
    copies: Optional[str] = None,
    against: Any = None,
    against_ids: Any = None,
    against_column: Optional[str] = None,
    _spill: Optional[bool] = None,
) -> Union[np.ndarray, int]:
    """Every unordered pair of distinct items within ``k`` bits, identical
    fingerprints included: a ``(P, 2)`` ``uint64`` array, smaller item
    first, rows sorted, as ``Index.find_all`` returns for the same items.

    ``copies``: ``"all"`` (the default) lists every pair of copies (items
    with the same fingerprint: ``c`` copies make ``c (c - 1) / 2`` pairs);
    ``"first"`` pairs each copy only with the first copy of its fingerprint
    (in source order), and first copies with each other, one pair per copy:
    enough for clusters and dedup. Left unset, a ``UserWarning`` says so
    when copies make most of an answer over 2^26 pairs. The pairs are
    counted before any is made: an answer that would not fit in memory is
    a ``MemoryError`` that suggests ``out=`` or ``copies="first"``.

    ``ids``: one id per item, non-negative ints of any kind or strings (or
    a Parquet column's name), given back in the answer (strings as a numpy
    object array, ordered as Python orders them); by default items are
    positions. ``out``: a ``.npy`` or ``.parquet`` path
    (columns ``id_a``, ``id_b``) to write the pairs to instead, never all
    in memory; then the count is returned and ``workdir`` defaults to
    ``out + ".work"``, which makes the job resumable. ``memory_limit``:
    bytes or a string like ``"8GiB"`` (default: 60 % of the memory
    available). ``blocks``/``tables`` fix the table design (default: the
    one with the least work for the size).

    ``against``: a store of old fingerprints (any source, read a chunk at
    a time, never held): then only the pairs between the two sides are
    listed, as ``[new, old]`` rows (``ids`` and ``against_ids`` name
    them; ``against_column`` is the store's Parquet column, by default
    ``column``), sorted, every copy on each side paired. The new side is
    held in memory, the store streamed past it (see ``dedup``).

    >>> import numpy as np, rsimhash
    >>> fps = np.array([0b1011, 0b1001, 1 << 40, 0b1011], dtype=np.uint64)
    >>> rsimhash.batch.find_all(fps, k=1).tolist()
    [[0, 1], [0, 3], [1, 3]]
    >>> rsimhash.batch.find_all(fps, k=1, copies="first").tolist()  # 3 is a copy of 0
    [[0, 1], [0, 3]]
    >>> old = np.array([0b0011, 1 << 41], dtype=np.uint64)
    >>> rsimhash.batch.find_all(fps, k=1, against=old).tolist()  # [new, old]
    [[0, 0], [3, 0]]
    """
    if copies is not None and copies not in ("all", "first"):
        raise ValueError(f'copies must be "all" or "first", got {copies!r}')
    if against is not None:
        if out is not None:
            raise ValueError("out= is not supported with against=: the pairs of a batch against a store are returned as an array")
        if copies == "first":
            raise ValueError('copies="first" is not supported with against=: every copy on each side is paired')
        return _find_all_against(
            source,
            against,
            k=k,
            ids=ids,
            column=column,
            against_ids=against_ids,
            against_column=against_column,
            memory_limit=memory_limit,
            workdir=workdir,
            threads=threads,
            progress=progress,
            blocks=blocks,
            tables=tables,
        )
    out_path, ext = _output(out, (".npy", ".parquet"), "find_all")
    with ExitStack() as stack:
        workdir = workdir if workdir is not None or out_path is None else out_path + ".work"
        job = _Job(
            stack,
            k=k,
            memory_limit=memory_limit,
            workdir=workdir,
            out=out_path,
            threads=threads,
            progress=progress,
            blocks=blocks,
            tables=tables,
            spill=_spill,
            desc="find_all",
        )
        job.kwargs["copies"] = copies
        r = resolve(source, column=column, ids=ids, spill_dir=job.spill_dir, stack=stack)
        if out_path is None:
            return r.named(_core.batch_find_all(r.values, ids=r.ids, **job.kwargs))
        if ext == ".npy":
            if r.names is not None:
                raise TypeError(f"out={out_path!r}: a .npy file holds numbers; with string ids write a .parquet file")
            return int(_core.batch_find_all(r.values, ids=r.ids, out=out_path, **job.kwargs))
        staged = Atomic(out_path + ".npy")  # a hidden temporary name beside the output
        stack.callback(staged.discard)
        count = int(_core.batch_find_all(r.values, ids=r.ids, out=staged.tmp, **job.kwargs))
        pairs_npy_to_parquet(staged.tmp, out_path, names=r.by_rank)
        return count


def dedup(
    source: Any,
    k: int = 3,
    *,
    ids: Any = None,
    column: Optional[str] = None,
    memory_limit: Memory = None,
    workdir: Any = None,
    threads: Optional[int] = None,
    progress: Progress = None,
    blocks: Optional[int] = None,
    tables: Optional[int] = None,
    return_matched: bool = False,
    against: Any = None,
    against_ids: Any = None,
    against_column: Optional[str] = None,
    _spill: Optional[bool] = None,
) -> Any:
    """The keep mask of a dedup: a ``bool`` array, ``False`` exactly for each
    item within ``k`` bits of an item kept before it (in source order), the
    answer of ``Index.add_unique`` over the items in order.

    With ``return_matched=True``, ``(keep, matched)``: ``matched`` names,
    for each dropped item, the earliest kept item within ``k``, and each
    kept item itself (its id when ``ids`` are given, else its position).

    ``against``: a store of fingerprints kept before (any source: an
    array, ``.npy`` files or a directory of them, Parquet with
    ``against_column``, by default ``column``), beyond memory: an item is
    also dropped when it is within ``k`` of any stored fingerprint. When
    the store is a dedup's kept items, this keeps exactly what a dedup of
    the store followed by ``source`` keeps among ``source``'s items, at
    the cost of the new items plus one pass over the store (the new side
    is held in memory, table by table; the store is streamed past it and
    never compared with itself). With ``return_matched=True``, ``(keep,
    matched, matched_old)``: ``matched_old[i]`` tells that ``matched[i]``
    is a stored item (its position, or ``against_ids[...]``) rather than
    a new one; an item within ``k`` of both is matched to the stored item
    of the smallest position.

    >>> import numpy as np, rsimhash
    >>> fps = np.array([0b1011, 0b1001, 1 << 40, 0b0001], dtype=np.uint64)
    >>> rsimhash.batch.dedup(fps, k=1).tolist()
    [True, False, True, True]
    >>> rsimhash.batch.dedup(fps, k=1, against=np.array([1 << 40], dtype=np.uint64)).tolist()
    [True, False, False, True]
    """
    if against is not None:
        return _dedup_against(
            source,
            against,
            k=k,
            ids=ids,
            column=column,
            against_ids=against_ids,
            against_column=against_column,
            memory_limit=memory_limit,
            workdir=workdir,
            threads=threads,
            progress=progress,
            blocks=blocks,
            tables=tables,
            return_matched=return_matched,
        )
    with ExitStack() as stack:
        job = _Job(
            stack,
            k=k,
            memory_limit=memory_limit,
            workdir=workdir,
            out=None,
            threads=threads,
            progress=progress,
            blocks=blocks,
            tables=tables,
            spill=_spill,
            desc="dedup",
        )
        r = resolve(source, column=column, ids=ids, spill_dir=job.spill_dir, stack=stack)
        job.check_ids(r.ids)
        keep, dropped, matched = _core.batch_dedup(r.values, **job.kwargs)
        if not return_matched:
            return keep
        m = np.arange(len(keep), dtype=np.uint64)
        m[dropped] = matched
        return keep, (m if r.ids is None else r.named(r.ids[m]))


def _against_job(stack: ExitStack, kw: Dict[str, Any], desc: str) -> Tuple[_Job, Any, Any]:
    """The job of a batch against a store, and both sides resolved."""
    job = _Job(
        stack,
        k=kw["k"],
        memory_limit=kw["memory_limit"],
        workdir=kw["workdir"],
        out=None,
        threads=kw["threads"],
        progress=kw["progress"],
        blocks=kw["blocks"],
        tables=kw["tables"],
        spill=None,
        desc=desc,
    )
    new = resolve(kw["source"], column=kw["column"], ids=kw["ids"], spill_dir=job.spill_dir, stack=stack)
    against_column = kw["against_column"]
    if against_column is None and not isinstance(kw["against"], np.ndarray):
        against_column = kw["column"] if _is_parquet(kw["against"]) else None
    old = resolve(
        kw["against"], column=against_column, ids=kw["against_ids"], spill_dir=job.spill_dir, stack=stack, name="against"
    )
    return job, new, old


def _is_parquet(source: Any) -> bool:
    from ._sources import _kind, _paths

    try:
        return any(_kind(p) == "parquet" for p in _paths(source))
    except (OSError, ValueError, TypeError):
        return False  # resolve() reports it


def _find_all_against(source: Any, against: Any, **kw: Any) -> np.ndarray:
    with ExitStack() as stack:
        job, new, old = _against_job(stack, dict(kw, source=source, against=against), "find_all")
        rows = _core.batch_find_all_against(new.values, old.values, ids=new.ids, against_ids=old.ids, **job.kwargs)
        if new.names is None and old.names is None:
            return rows
        named = np.empty(rows.shape, dtype=object)
        named[:, 0] = new.named(rows[:, 0])
        named[:, 1] = old.named(rows[:, 1])
        return named


def _dedup_against(source: Any, against: Any, *, return_matched: bool, **kw: Any) -> Any:
    with ExitStack() as stack:
        job, new, old = _against_job(stack, dict(kw, source=source, against=against), "dedup")
        job.check_ids(new.ids)
        keep, dropped, matched, matched_old = _core.batch_dedup_against(new.values, old.values, **job.kwargs)
        if not return_matched:
            return keep
        m = np.arange(len(keep), dtype=np.uint64)
        in_old = np.zeros(len(keep), dtype=bool)
        in_old[dropped] = matched_old
        m[dropped] = matched
        out = m if new.names is None and old.names is None else m.astype(object)
        if new.ids is not None:
            out[~in_old] = new.named(new.ids[m[~in_old]])
        if old.ids is not None:
            out[in_old] = old.named(old.ids[m[in_old]])
        return keep, out, in_old


def clusters(
    source: Any,
    k: int = 3,
    *,
    method: str = "connected",
    min_size: int = 2,
    ids: Any = None,
    column: Optional[str] = None,
    out: Any = None,
    memory_limit: Memory = None,
    workdir: Any = None,
    threads: Optional[int] = None,
    progress: Progress = None,
    blocks: Optional[int] = None,
    tables: Optional[int] = None,
    _spill: Optional[bool] = None,
) -> Union[Tuple[np.ndarray, np.ndarray], int]:
    """Clusters of at least ``min_size`` items as ``(ids, labels)``: one row
    per member, clusters numbered from 0 in the order of their smallest id,
    members sorted by id within each, as ``Index.cluster`` lists them
    (``ids[labels == c]`` is cluster ``c``).

    ``method="connected"``: components of the within-``k`` graph, through
    a union-find of 4 bytes per item; ``"leader"``: in source order each
    item joins the earliest kept item within ``k`` (the dedup's) or leads a
    cluster. ``out``: a ``.tsv`` (header ``id<TAB>cluster``) or
    ``.parquet`` path to write the rows to instead; returns the row count.

    >>> import numpy as np, rsimhash
    >>> fps = np.array([0b1011, 1 << 40, 0b1001, 0b0001], dtype=np.uint64)
    >>> ids, labels = rsimhash.batch.clusters(fps, k=1)
    >>> ids.tolist(), labels.tolist()
    ([0, 2, 3], [0, 0, 0])
    """
    out_path, ext = _output(out, (".tsv", ".parquet"), "clusters")
    if isinstance(min_size, bool) or not isinstance(min_size, (int, np.integer)):
        raise TypeError(f"min_size must be an int, got {type(min_size).__name__}")
    with ExitStack() as stack:
        workdir = workdir if workdir is not None or out_path is None else out_path + ".work"
        job = _Job(
            stack,
            k=k,
            memory_limit=memory_limit,
            workdir=workdir,
            out=out_path,
            threads=threads,
            progress=progress,
            blocks=blocks,
            tables=tables,
            spill=_spill,
            desc="clusters",
        )
        r = resolve(source, column=column, ids=ids, spill_dir=job.spill_dir, stack=stack)
        job.check_ids(r.ids)
        members, starts = _core.batch_clusters(r.values, method=method, min_size=int(min_size), **job.kwargs)
        members, starts = _in_id_order(members, starts, r.ids)
        if out_path is not None:
            return write_clusters(out_path, ext, ((r.named(i), c) for i, c in cluster_rows(members, starts, r.ids)))
        member_ids, labels = _id_labels(members, starts, r.ids)
        return r.named(member_ids), labels


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
    texts each time it is called (it is called twice). Texts given again
    (the same bytes) are checked once; ``copies`` as in
    ``rsimhash.similar_pairs``. A line of a file longer than
    ``max_record_mb`` MiB is a ``ValueError`` naming it (it is never read
    into memory).

    >>> texts = ["the cat sat on the mat today", "the cat sat on the mat today!", "dogs bark"]
    >>> pairs, sim = rsimhash.batch.similar_pairs(texts, 0.9)
    >>> pairs.tolist(), sim.tolist()
    ([[0, 1]], [1.0])
    """
    if copies not in ("all", "first"):
        raise ValueError(f'copies must be "all" or "first", got {copies!r}')
    from ..similar import series_labels

    ids = series_labels(texts) if ids is None else ids
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
    ``texts`` as in ``similar_pairs``. With ``return_matched=True``,
    ``(keep, matched, similarity)``: the earliest kept text each dropped
    one is alike (each kept text itself) and their similarity (1 when kept).

    >>> rsimhash.batch.similar_dedup(["a b c d e f g", "a b c d e f g h", "x y z"], 0.5).tolist()
    [True, False, True]
    """
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
    earliest kept text it is alike). ``texts`` as in ``similar_pairs``.

    >>> ids, labels = rsimhash.batch.similar_clusters(["a b c d e f g", "x y z", "a b c d e f g h"], 0.5)
    >>> ids.tolist(), labels.tolist()
    ([0, 2], [0, 0])
    """
    if isinstance(min_size, bool) or not isinstance(min_size, (int, np.integer)) or min_size < 1:
        raise ValueError(f"min_size must be an int of at least 1, got {min_size!r}")
    if method not in ("connected", "leader"):
        raise ValueError(f'method must be "connected" or "leader", got {method!r}')
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
            desc=desc,
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


def _in_id_order(members: np.ndarray, starts: np.ndarray, ids: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """Clusters ``(members, starts)`` of positions, in the order of ``ids``
    when they do not increase with position (``_by_id``)."""
    if ids is not None and len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        return _by_id(members, starts, ids)
    return members, starts


def _id_labels(members: np.ndarray, starts: np.ndarray, ids: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """``(ids, labels)`` of clusters ``(members, starts)``: each member's id
    (its position without ``ids``) and its cluster's number."""
    sizes = np.diff(starts).astype(np.int64)
    labels = np.repeat(np.arange(len(sizes), dtype=np.uint64), sizes)
    pos = members.astype(np.uint64)
    return (pos if ids is None else ids[pos]), labels


def _by_id(members: np.ndarray, starts: np.ndarray, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Clusters reordered for ids that do not increase with position:
    members by id, clusters by their smallest id."""
    sizes = np.diff(starts).astype(np.int64)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((ids[members], labels))
    members = members[order]
    first = ids[members[starts[:-1].astype(np.int64)]] if len(sizes) else np.empty(0, np.uint64)
    rank = np.argsort(first, kind="stable")
    parts = [members[starts[c] : starts[c + 1]] for c in rank.tolist()]
    members = np.concatenate(parts) if parts else members
    new_starts = np.concatenate([[0], np.cumsum(sizes[rank])]).astype(np.uint64)
    return members, new_starts


def _output(out: Any, allowed: Tuple[str, ...], job: str) -> Tuple[Optional[str], str]:
    if out is None:
        return None, ""
    path = os.fspath(out)
    parent, ext = check_writable(path)
    if ext not in allowed:
        raise ValueError(f"out={path!r}: {job} writes {' or '.join(allowed)} files; name the file with one of those extensions")
    _remove_stale_temporaries(parent, os.path.basename(path))
    return path, ext


def _remove_stale_temporaries(directory: str, name: str) -> None:
    """Removes the hidden temporary files of ``name`` (``.NAME[.npy].PID[.N].tmp``
    and the same under a second dot) that a killed job left: those whose
    process is gone."""
    for entry in os.listdir(directory):
        if not entry.endswith(".tmp") or name not in entry:
            continue
        rest = entry.lstrip(".")
        if not rest.startswith(name):
            continue
        numbers = [p for p in rest[len(name) :].split(".") if p.isdigit()]
        if not numbers or int(numbers[0]) == os.getpid() or _alive(int(numbers[0])):
            continue
        try:
            os.remove(os.path.join(directory, entry))
        except OSError:
            pass


def _alive(pid: int) -> bool:
    return _files.pid_alive(pid)


def _remove_if_empty(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass
