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
chunks. Where every text's shingle set fits ``memory_limit`` they find
every pair by the exact join in one pass (``candidates="auto"``, the
default, or ``"exact"``, which refuses with a ``MemoryError`` where the
sets do not fit); beyond it they read the texts twice (fingerprints first,
then the shingle sets of the texts that candidates name), so memory stays
bounded for corpora larger than RAM::

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

from contextlib import ExitStack
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from .. import _rsimhash as _core
from .._memory import parse_memory
from ._job import Memory, Progress, _id_labels, _in_id_order, _Job, _output, _remove_if_empty
from ._outputs import Atomic, cluster_rows, pairs_npy_to_parquet, write_clusters
from ._similar_jobs import similar_clusters, similar_dedup, similar_pairs
from ._sources import resolve

__all__ = ["clusters", "dedup", "find_all", "parse_memory", "similar_clusters", "similar_dedup", "similar_pairs"]

for _f in (similar_clusters, similar_dedup, similar_pairs):
    _f.__module__ = __name__  # documented, and doctested, as rsimhash.batch's own


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
    out_path, ext = _output(out, (".npy", ".parquet"), "find_all", source)
    with ExitStack() as stack:
        if workdir is None and out_path is not None:
            # The job names this one itself: an empty one that a killed run left goes too.
            workdir = out_path + ".work"
            stack.callback(_remove_if_empty, workdir)
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
    out_path, ext = _output(out, (".tsv", ".parquet"), "clusters", source)
    if isinstance(min_size, bool) or not isinstance(min_size, (int, np.integer)):
        raise TypeError(f"min_size must be an int, got {type(min_size).__name__}")
    with ExitStack() as stack:
        if workdir is None and out_path is not None:
            # The job names this one itself: an empty one that a killed run left goes too.
            workdir = out_path + ".work"
            stack.callback(_remove_if_empty, workdir)
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
