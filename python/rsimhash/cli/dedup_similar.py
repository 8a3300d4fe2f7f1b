"""``rsimhash dedup --jaccard T``: the input minus every record whose shingle
set is at least T alike (``--measure``) the set of a record kept before it,
checked exactly for each candidate pair of fingerprints (``similar_pairs.py``).

With the exact join (``--candidates exact``, or ``auto`` when every
record's set and the records fit ``--memory-limit``): every record gathered,
every alike pair by the exact join, then the kept records written.

With candidates, in memory, one pass: the records go through ``OnlineDedup`` a chunk at a
time, which holds the kept records' sets only. When those could outgrow
``--memory-limit`` (estimated from the input's size), two passes: candidate
fingerprints spilled and paired by the batch engine, then the records read
again and each candidate checked when its later record comes; a chunk's
kept records are written as soon as its pairs are checked. Both write the
same bytes: the kept records as read, in input order, and with
``--removed`` a TSV ``id<TAB>duplicate_of<TAB>jaccard`` (or
``containment``) naming for each removed record the earliest kept record
it is alike.
"""

from __future__ import annotations

import argparse
from typing import Any, Iterator, Optional

import numpy as np

from .._records import Chunk, Source
from . import similar_pairs
from .dedup_writer import Kept, kept_writer, removed_header, shard_names, shards_done, summary, write_removed
from .outputs import Output
from .progress import Progress
from .spill import Ids, Workspace, engine_part


def run(
    args: argparse.Namespace,
    source: Source,
    chunks: Iterator[Chunk],
    first: Optional[Chunk],
    out: Output,
    removed: Optional[Output],
    limit: int,
    workspace: Workspace,
    path: str,
) -> int:
    opts = similar_pairs.settings(args)
    similar_pairs.check_format(source)
    if removed is not None:
        removed.write(removed_header(similar_pairs.similarity_column(args), hasattr(source, "shard_of")))
    fits = path == "-" or first is None or similar_pairs.text_bytes(source) * similar_pairs.SET_BYTES_PER_TEXT_BYTE <= limit
    # The exact join holds every record's set and the records themselves: a
    # stream of unknown size (stdin) keeps to the candidates unless told.
    exact_fits = first is None or (path != "-" and similar_pairs.text_bytes(source) * EXACT_BYTES_PER_TEXT_BYTE <= limit)
    if opts.forced or (opts.exact and exact_fits):
        return _in_memory_exact(args, opts, source, chunks, out, removed)
    if fits and path == args.input:
        return _in_memory(args, opts, source, chunks, out, removed)
    return _two_pass(args, opts, source, chunks, out, removed, limit, workspace, path)


# The exact dedup holds every record's set (``SET_BYTES_PER_TEXT_BYTE``) and
# the records read, to write the kept ones once every pair is known.
EXACT_BYTES_PER_TEXT_BYTE = 3


def _in_memory_exact(
    args: argparse.Namespace, opts: Any, source: Source, chunks: Iterator[Chunk], out: Output, removed: Optional[Output]
) -> int:
    """``--candidates exact`` (or ``auto`` where it fits): every record's set
    gathered, every alike pair by the exact join, then the kept records
    written in input order."""
    from .. import _rsimhash

    corpus = _rsimhash.SimilarCorpus(opts.threshold, **similar_pairs.core_settings(opts), exact=True)
    progress = Progress("dedup", source.total, args.quiet)
    held: list = []
    for chunk in chunks:
        for piece in similar_pairs.pieces(chunk):
            corpus.add(piece, threads=args.threads)
        held.append(chunk)
        progress.update(source.position(), source.records, shards_done(source))
    progress.close()
    keep, dropped, matched, sims = similar_pairs.with_bars(
        args, "dedup", lambda bars: corpus.dedup(threads=args.threads, progress=bars)
    )
    writer = kept_writer(out, lambda: source)
    ids: list = []
    try:
        position = 0
        for chunk in held:
            writer.write(chunk, keep[position : position + len(chunk)])
            ids.extend(chunk.ids if removed is not None else ())
            position += len(chunk)
    except BaseException:
        writer.discard()
        raise
    writer.close()
    if removed is not None and len(dropped):
        step = 1 << 16
        for lo in range(0, len(dropped), step):
            d, m = dropped[lo : lo + step].astype(np.int64), matched[lo : lo + step].astype(np.int64)
            shards = shard_names(source, source.shard_of(d), m) if hasattr(source, "shard_of") else None
            write_removed(
                removed,
                [ids[i] for i in d.tolist()],
                [ids[i] for i in m.tolist()],
                similar_pairs.fmt(sims[lo : lo + step]),
                shards,
            )
    summary(progress, args, source, len(dropped), [similar_pairs.join_part(True, opts)])
    return 0


def _in_memory(
    args: argparse.Namespace, opts: Any, source: Source, chunks: Iterator[Chunk], out: Output, removed: Optional[Output]
) -> int:
    from .. import _rsimhash

    online = _rsimhash.OnlineDedup(opts.threshold, **similar_pairs.core_settings(opts))
    writer = kept_writer(out, lambda: source)
    kept = Kept(fingerprints=False) if removed is not None else None
    progress = Progress("dedup", source.total, args.quiet)
    try:
        n_removed = _in_memory_chunks(args, online, source, chunks, writer, kept, removed, progress)
    except BaseException:
        writer.discard()  # the shard being written; those finished stay
        raise
    writer.close()
    summary(progress, args, source, n_removed, [similar_pairs.join_part(False, opts)])
    return 0


def _in_memory_chunks(
    args: argparse.Namespace,
    online: Any,
    source: Source,
    chunks: Iterator[Chunk],
    writer: Any,
    kept: Optional[Kept],
    removed: Optional[Output],
    progress: Progress,
) -> int:
    position = n_removed = 0
    for chunk in chunks:
        answers = [online.add(piece, threads=args.threads) for piece in similar_pairs.pieces(chunk)]
        keep = np.concatenate([a[0] for a in answers]) if answers else np.zeros(0, bool)
        writer.write(chunk, keep)
        if kept is not None and removed is not None:
            ids = chunk.ids  # once: a property
            new = np.flatnonzero(keep)
            kept.add(new.astype(np.uint64) + np.uint64(position), [ids[j] for j in new.tolist()])
            gone = np.flatnonzero(~keep)
            if len(gone):
                matched = np.concatenate([a[1] for a in answers])[gone]
                sims = similar_pairs.fmt(np.concatenate([a[2] for a in answers])[gone])
                shards = shard_names(source, np.full(len(gone), chunk.shard), matched)
                write_removed(removed, [ids[j] for j in gone.tolist()], kept.ids_at(kept.find(matched)), sims, shards)
        n_removed += len(keep) - int(np.count_nonzero(keep))
        position += len(keep)
        progress.update(source.position(), source.records, shards_done(source))
    return n_removed


def _two_pass(
    args: argparse.Namespace,
    opts: Any,
    source: Source,
    chunks: Iterator[Chunk],
    out: Output,
    removed: Optional[Output],
    limit: int,
    workspace: Workspace,
    path: str,
) -> int:
    progress = Progress("dedup", source.total, args.quiet)
    second = similar_pairs.SecondPass(args, opts, workspace, path, limit, full_rows=True)
    ids = Ids(0, workspace) if removed is not None else None
    writer: Any = None
    try:
        for chunk in chunks:
            second.first(chunk)
            if ids is not None:
                ids.extend_chunk(chunk)
            progress.update(source.position(), source.records)
        progress.close()
        if ids is not None:
            ids.finish()
        writer = kept_writer(out, lambda: second.source or source)  # shards: those of the second reading
        again_progress = Progress("dedup: writing", source.total, args.quiet)
        position = n_removed = 0
        for chunk, _, _, _, dropped, matched, sims in second.again():
            keep = np.ones(len(chunk), bool)
            keep[dropped.astype(np.int64) - position] = False
            writer.write(chunk, keep)
            if ids is not None and removed is not None and len(dropped):
                shards = shard_names(second.source, np.full(len(dropped), chunk.shard), matched)
                write_removed(removed, ids.text(dropped.tolist()), ids.text(matched.tolist()), similar_pairs.fmt(sims), shards)
            n_removed += len(dropped)
            position += len(chunk)
            if second.source is not None:
                again_progress.update(second.source.position(), second.source.records, shards_done(second.source))
        writer.close()
        again_progress.close()
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    finally:
        second.close()
        if ids is not None:
            ids.close()
    summary(progress, args, source, n_removed, [similar_pairs.join_part(False, opts), engine_part(workspace)])
    return 0
