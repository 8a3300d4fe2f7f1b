"""``rsimhash dedup`` through the batch engine, for inputs whose index would
not fit in memory: two passes over the input.

1. The records are read and fingerprinted; the fingerprints go to a
   ``.npy`` spill file in the work directory (8 bytes a record), and, for
   ``--removed``, the ids to an ids file.
2. ``rsimhash.batch.dedup`` gives the keep mask and, for each removed
   record, the earliest kept record within K bits: the answer of
   ``Index.add_unique`` over the records in order, found one table at a
   time within the memory limit.
3. The input is read again (stdin from its copy in the work directory) and
   the kept records are written exactly as the one-pass path writes them;
   bad lines skipped in the first pass are skipped again, silently.

Sharded inputs written one output per shard (``shard_out.py``): pass 3
goes shard by shard, each shard read again only when its output is not
finished yet (a rerun of a killed run starts reading at the first
unfinished shard); the ``--removed`` rows of every shard come from the
spilled ids, in input order, whether the shard is read again or not.
"""

from __future__ import annotations

import argparse
import bisect
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from .._records import Chunk, Source
from .dedup_writer import KeptWriter, bits, shard_names, shards_done, summary, write_removed
from .errors import InputError
from .options import open_source
from .outputs import Output
from .pipeline import fingerprints_of, prefetch
from .progress import Progress
from .shard_out import ShardOutputs
from .spill import Fingerprints, Ids, Workspace, engine_part


def dedup_batch(
    args: argparse.Namespace,
    source: Source,
    chunks: Iterator[Chunk],
    out: Output,
    removed: Optional[Output],
    limit: int,
    workspace: Workspace,
    path: str,
) -> int:
    from .. import batch

    # Pass 1: fingerprints (and ids) to spill files.
    progress = Progress("dedup", source.total, args.quiet)
    store = Fingerprints(0, workspace)
    saving = getattr(args, "save_fingerprints", None) is not None
    ids = Ids(0, workspace) if removed is not None or saving else None
    try:
        for chunk in chunks:
            store.add(fingerprints_of(chunk, args.mode, args.width, args.threads))
            if ids is not None:
                ids.extend_chunk(chunk)
            progress.update(source.position(), source.records, shards_done(source))
        fps_source = store.finish()
    finally:
        store.close()
    if ids is not None:
        ids.finish()
    progress.close()
    stores = getattr(args, "against_stores", None)
    if stores is not None:
        stores.materialize(workspace.path)
    job = dict(
        return_matched=True,
        blocks=args.blocks,
        memory_limit=limit,
        workdir=workspace.path,
        threads=args.threads,
        progress=False if args.quiet else None,
    )
    in_old = None
    if stores is not None and len(stores):
        # Against the stores: the new records held, the stored ones streamed past them.
        keep, matched, in_old = batch.dedup(fps_source, args.distance, against=stores.paths, **job)
    else:
        keep, matched = batch.dedup(fps_source, args.distance, **job)
    fps: Any = np.load(fps_source, mmap_mode="r") if isinstance(fps_source, str) else fps_source

    # Pass 2: the kept records, as read.
    n_removed = int(len(keep) - np.count_nonzero(keep))
    removed_rows = None
    if removed is not None and ids is not None:
        removed_rows = _Removed(removed, ids, stores, fps, keep, matched, in_old, source)
    if isinstance(out, ShardOutputs):
        _write_shards(args, source, keep, out, removed_rows)
    else:
        again_progress = Progress("dedup: writing", source.total, args.quiet)
        with open_source(args, need_ids=False, full_rows=True, path=path, quiet_bad_lines=True, shingling=None) as again:
            writer = KeptWriter(out, again)
            position = 0
            for chunk in prefetch(again.chunks()):
                n = len(chunk)
                writer.write(chunk, keep[position : position + n])
                if removed_rows is not None:
                    removed_rows.write(position, position + n)
                position += n
                again_progress.update(again.position(), again.records)
            writer.close()
        again_progress.close()
    if saving and ids is not None and getattr(args, "own_part", None) is None:  # a rerun adds no second part
        from .store import save as save_store  # `store` is the spilled fingerprints here

        kept = np.flatnonzero(keep)
        sharded: Any = source if hasattr(source, "shard_of") else None  # a ShardedSource
        rels = [s.rel for s in sharded.shards] if sharded is not None else None
        shards = [rels[i] for i in sharded.shard_of(kept).tolist()] if rels is not None else None
        digest = getattr(args, "input_digest", None)
        save_store(args.save_fingerprints, args, np.asarray(fps[kept]), ids.text(kept.tolist()), shards, digest)
    if ids is not None:
        ids.close()
    summary(progress, args, source, n_removed, [engine_part(workspace)])
    return 0


def _write_shards(args: argparse.Namespace, source: Any, keep: np.ndarray, outputs: ShardOutputs, removed: Any) -> None:
    """Pass 2 of a sharded input: shard by shard, the kept records of each
    shard not finished yet to its own output, renamed into place when whole.
    The next unfinished shard is opened when one starts (its reader reads
    ahead), so shard boundaries do not stall the reading."""
    starts = list(source.starts) + [len(keep)]
    starts += [len(keep)] * (len(source.shards) + 1 - len(starts))
    progress = Progress("dedup: writing", source.total, args.quiet)
    todo = [i for i in range(len(source.shards)) if not outputs.is_done(i)]
    ahead: Dict[int, Source] = {}

    def reopen(i: int) -> Source:
        return open_source(args, need_ids=False, full_rows=True, path=source.shards[i].path, quiet_bad_lines=True, shingling=None)

    try:
        _write_each(args, source, keep, outputs, removed, starts, progress, todo, ahead, reopen)
    finally:
        for s in ahead.values():
            s.close()
    outputs.sync()
    progress.close()


def _write_each(
    args: argparse.Namespace,
    source: Any,
    keep: np.ndarray,
    outputs: ShardOutputs,
    removed: Any,
    starts: List[int],
    progress: Progress,
    todo: List[int],
    ahead: Dict[int, Source],
    reopen: Any,
) -> None:
    read = 0
    for i, shard in enumerate(source.shards):
        lo, hi = starts[i], starts[i + 1]
        if removed is not None:
            removed.write(lo, hi)
        if not outputs.is_done(i):
            out = outputs.open(i)
            try:
                again = ahead.pop(i) if i in ahead else reopen(i)
                at = bisect.bisect_right(todo, i)
                if at < len(todo):
                    ahead[todo[at]] = reopen(todo[at])
                with again:
                    writer = KeptWriter(out, again)
                    position = lo
                    for chunk in prefetch(again.chunks()):
                        n = len(chunk)
                        writer.write(chunk, keep[position : position + n])
                        position += n
                        progress.update(read + again.position(), position, (i, len(source.shards)))
                    writer.close()
                if position != hi:
                    raise InputError(
                        shard.path, None, f"changed while it was read: {position - lo:,} records now, {hi - lo:,} before"
                    )
            except BaseException:
                out.discard()
                raise
            outputs.finish(i, out)
        read += shard.size


class _Removed:
    """The ``--removed`` rows of the records removed among positions
    ``lo..hi``, from the spilled ids: no input is read for them."""

    def __init__(self, out: Output, ids: Any, stores: Any, fps: Any, keep: np.ndarray, matched: Any, in_old: Any, source: Any):
        self.out, self.ids, self.stores, self.fps, self.matched, self.in_old = out, ids, stores, fps, matched, in_old
        self.keep, self.source = keep, source

    def write(self, lo: int, hi: int) -> None:
        gone = np.flatnonzero(~self.keep[lo:hi]) + lo
        if len(gone):
            _write_removed(self.out, self.ids, self.stores, self.fps, gone, self.matched, self.in_old, self.source)


def _write_removed(
    removed: Output, ids: Any, stores: Any, fps: Any, gone: np.ndarray, matched: Any, in_old: Any, source: Any
) -> None:
    """``--removed`` rows of removed records at positions ``gone``, in order:
    each names the kept record it matched, in this input or in a store (and,
    of a sharded input, both records' shards)."""
    others = matched[gone]
    if in_old is None and not hasattr(source, "shard_of"):
        # The usual run, both records of each row in this input: the rows
        # made in the core from the spilled ids, no Python string a field.
        others = np.asarray(others, dtype=np.int64)
        removed.write(ids.rows([("id", gone), ("id", others), ("number", bits(fps[gone], fps[others]))]))
        return
    old = in_old[gone] if in_old is not None else np.zeros(len(gone), dtype=bool)
    names: List[str] = ids.text(gone.tolist())
    other_names: List[str] = [""] * len(gone)
    other_fps = np.empty(len(gone), dtype=np.uint64)
    new_at = np.flatnonzero(~old)
    for i, name in zip(new_at.tolist(), ids.text(others[new_at].tolist())):
        other_names[i] = name
    other_fps[new_at] = fps[others[new_at]]
    old_at = np.flatnonzero(old)
    stored_shards: Optional[List[Optional[str]]] = None
    if len(old_at):
        for i, name in zip(old_at.tolist(), stores.ids(others[old_at])):
            other_names[i] = name
        other_fps[old_at] = stores.fingerprints(others[old_at])
        stored_shards = [None] * len(gone)
        for i, name in zip(old_at.tolist(), stores.shards(others[old_at])):
            stored_shards[i] = name
    where = np.where(old, 0, others).astype(np.int64)  # a stored record's shard is read from its store
    shards = shard_names(source, source.shard_of(gone) if hasattr(source, "shard_of") else gone, where, stored_shards)
    write_removed(removed, names, other_names, bits(fps[gone], other_fps).tolist(), shards)
