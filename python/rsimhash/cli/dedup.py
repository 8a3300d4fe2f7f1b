"""``rsimhash dedup``: the input minus every record within K of a record kept before it.

Records are read in chunks, each chunk is fingerprinted on all cores and
passed to ``Index.add_unique`` in input order, so a record is removed exactly
when a record *kept* earlier (in this chunk or a previous one) is within K
bits; the first of a group of near-duplicates is the one kept. Kept records
are written as they were read: the same bytes, line ending included, in
input order (a hash TSV keeps its header; a Parquet input gives a Parquet
output with the kept rows). Blank lines are not records and are dropped.

``--removed`` writes a TSV with the header ``id<TAB>duplicate_of<TAB>distance``:
one row per removed record, in input order, naming the earliest kept record
within K bits of it and their distance in bits.

Memory: the index (a few tens of bytes per kept record) plus, with
``--removed``, each kept record's id; never the input. An input whose index
would not fit ``--memory-limit`` (estimated from its size and its first
chunk) goes through the batch engine in two passes instead (see
``dedup_batch.py``), with the same output.

Several input shards (``--input`` repeated, a directory, a glob; see
``shards.py``) are one input, read in their order; ``--output DIR`` then
writes one output per shard (``shard_out.py``: renamed into place when
whole, resumable after a kill), and ``--removed`` adds the columns
``shard<TAB>duplicate_of_shard``.

``--jaccard T`` removes instead each record whose shingle set is at least T
alike the set of a record kept before it, checked exactly for each
candidate pair of fingerprints (``dedup_similar.py``); ``--removed`` then
names the similarity, not the distance.
"""

from __future__ import annotations

import argparse
import os
from itertools import chain
from typing import Any, Iterator, Optional

import numpy as np

from .._gate import is_special
from .._records import Chunk, Source
from . import similar_pairs
from .dedup_writer import Seen, kept_writer, removed_header, shard_names, shards_done, summary
from .errors import UsageError
from .options import add_distance, add_input, add_memory, add_run, add_text, make_index, memory_limit, open_source
from .outputs import Output, Outputs
from .pipeline import fingerprints_of, prefetch
from .progress import Progress
from .shards import is_sharded, resolve_args
from .spill import Workspace, copy_stdin

# Bytes a record costs on the in-memory path when it is kept: its share of
# the Index, and with --removed its position, fingerprint and id.
IN_MEMORY_BYTES = 128
ID_BYTES = 96
# The in-memory path's index lives for the run only. Where the input's
# records need at most 1/RAW_MARGIN of the memory limit, its tables stay raw:
# no Huffman decoding at each probe nor encoding at each merge (about 7 % of
# a dedup's CPU) for a little more of the index's memory (37 -> 42 bytes an
# item at 10^6 items, 76 -> 93 at 10^7). Only up to RAW_MAX_K: a design for
# K <= 3 has at most 10 tables below 2^30 items, one for a larger K up to
# hundreds, whose raw tables cost a third more than packed ones (K = 6: 213
# -> 285 bytes an item). An input of unknown size (stdin) keeps them packed.
RAW_MARGIN = 2
RAW_MAX_K = 3

DESCRIPTION = """\
Write the input records, unchanged and in input order, minus every record
that is within K bits of a record kept before it (the first of each group of
near-duplicates is kept).

examples:
  rsimhash dedup --input corpus.jsonl --output kept.jsonl --removed removed.tsv
  rsimhash dedup --input crawl/ --output kept/    # one output per shard of crawl/
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p, shards=True)
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default="-",
        help="the kept records as read, in the input's format; - writes stdout; a name ending in .gz or .zst is "
        "compressed. With several input shards (a directory, a glob, --input repeated): a directory DIR, "
        "one output per shard under the shard's relative name, same format and compression (- writes "
        "them all to stdout). Default: %(default)s (as find-all and fingerprint)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="with several input shards: write into an --output directory that holds other files too "
        "(they are left as they are); refused otherwise",
    )
    p.add_argument(
        "--removed",
        metavar="FILE",
        default=None,
        help="also write a TSV 'id<TAB>duplicate_of<TAB>distance' naming each removed "
        "record and the kept record it is a near-duplicate of; with several input shards, two more "
        "columns 'shard<TAB>duplicate_of_shard' name their shards",
    )
    p.add_argument(
        "--against",
        metavar="DIR_OR_INDEX",
        action="append",
        default=None,
        help="also remove every record within K bits of a record kept by an earlier run and saved in the store "
        "DIR (see --save-fingerprints), or held in an index file made by 'rsimhash index build' (repeatable); "
        "--removed names the stored record",
    )
    p.add_argument(
        "--save-fingerprints",
        metavar="DIR",
        default=None,
        help="add the kept records' ids and fingerprints to the store DIR (made when missing), for later runs with --against DIR",
    )
    add_text(p)
    add_distance(p)
    similar_pairs.add_arguments(p, "remove records alike an earlier kept one")
    add_memory(p)
    add_run(p)


def run(args: argparse.Namespace) -> int:
    resolve_args(args)
    if args.jaccard is not None:
        similar_pairs.settings(args)  # a bad combination of flags fails before any file is touched
    incremental = bool(args.against) or args.save_fingerprints is not None
    sharded = is_sharded(args.input)
    if not hasattr(args, "notes"):
        args.notes = []
    if incremental:
        if args.jaccard is not None:
            raise UsageError("--against and --save-fingerprints work on fingerprints; they do not combine with --jaccard")
        if args.input == "-":
            raise UsageError("--against and --save-fingerprints read the input twice; give it as a file, not stdin")
        from . import store
        from .shard_out import input_digest
        from .shards import Shard

        # This input's identity: a store that holds a part made from it is
        # read as it was before that part, and no second part is added.
        shards = args.input if sharded else [Shard(args.input, os.path.basename(args.input), 0)]
        args.input_digest = input_digest(args, shards)
        own = {}
        for d in (args.against or []) + ([args.save_fingerprints] if args.save_fingerprints is not None else []):
            number = store.own_part(d, args.input_digest)
            if number is not None:
                own[os.path.realpath(d)] = number
        save_to = os.path.realpath(args.save_fingerprints) if args.save_fingerprints is not None else None
        args.own_part = own.get(save_to) if save_to is not None else None
        if own:
            where = ", ".join(f"{d}/part-{n:05d}" for d, n in sorted(own.items()))
            args.notes.append(f"already done: this input's part is {where}; run against the store as it was, no part added")
        # A bad store fails before any work.
        args.against_stores = store.open_stores(args.against or [], args, own)
        if args.save_fingerprints is not None and os.path.isdir(args.save_fingerprints):
            if os.path.exists(os.path.join(args.save_fingerprints, store.MANIFEST)):
                store.check(args.save_fingerprints, args, "--save-fingerprints")
    index = make_index(args.distance, args.blocks)
    limit = memory_limit(args)
    explicit = args.memory_limit is not None or args.workdir is not None
    need_ids = args.removed is not None or args.save_fingerprints is not None
    shard_out = None
    if sharded and not is_special(args.output):
        from .shard_out import ShardOutputs

        shard_out = ShardOutputs(args.output, args.input, args)  # refuses a directory of other files before any work
    elif sharded and args.format == "parquet":
        raise UsageError("Parquet shards are written one output per shard: give --output DIR")
    # The work directory goes beside the output (directory), never into it.
    with Workspace(args.workdir, args.output) as workspace:
        path = args.input
        if args.input == "-" and explicit:
            # Read twice: stdin is copied first (its size is not known ahead).
            path = copy_stdin(workspace)
        with (
            open_source(
                args,
                need_ids=need_ids,
                full_rows=True,
                path=path,
                shingling=None if args.jaccard is not None else "args",
                qualify_line_ids=False,  # --removed names the shard of each record
            ) as source,
            Outputs() as outs,
        ):
            out: Any = outs.open(args.output) if shard_out is None else shard_out
            removed = outs.open(args.removed) if args.removed is not None else None
            chunks = prefetch(source.chunks())
            first = next(chunks, None)
            rest = chain([first], chunks) if first is not None else chunks
            if args.jaccard is not None:
                from . import dedup_similar

                return dedup_similar.run(args, source, rest, first, out, removed, limit, workspace, path)
            if removed is not None:
                removed.write(removed_header("distance", sharded))
            per_record = IN_MEMORY_BYTES + (ID_BYTES if need_ids else 0)
            estimated = _estimated_records(source)
            if path != "-" and (incremental or path != args.input or estimated * per_record > limit):
                from .dedup_batch import dedup_batch

                return dedup_batch(args, source, rest, out, removed, limit, workspace, path)
            if path != "-" and args.distance <= RAW_MAX_K and estimated * per_record * RAW_MARGIN <= limit:
                index = make_index(args.distance, args.blocks, compress=False)
            return _in_memory(args, index, source, rest, out, removed)


def _estimated_records(source: Source) -> int:
    """Records of the whole input, from what its first chunk held."""
    if source.format == "parquet":
        return int(source.rows())
    read = source.position()
    if not source.total or not read:
        return source.records
    return int(source.total * source.records / read)


def _in_memory(
    args: argparse.Namespace, index: Any, source: Source, chunks: Iterator[Chunk], out: Output, removed: Optional[Output]
) -> int:
    """The dedup through an ``Index`` of the kept records, in one pass."""
    writer = kept_writer(out, lambda: source)
    seen = Seen() if removed is not None else None
    progress = Progress("dedup", source.total, args.quiet)
    try:
        n_removed = _in_memory_chunks(args, index, source, chunks, writer, seen, removed, progress)
    except BaseException:
        writer.discard()  # the shard being written; those finished stay (a rerun resumes after them)
        raise
    writer.close()
    summary(progress, args, source, n_removed, [])
    return 0


def _in_memory_chunks(
    args: argparse.Namespace,
    index: Any,
    source: Source,
    chunks: Iterator[Chunk],
    writer: Any,
    seen: Optional[Seen],
    removed: Optional[Output],
    progress: Progress,
) -> int:
    """Each chunk through the index and its kept records to ``writer``; the records removed."""
    position = n_removed = 0
    for chunk in chunks:
        fps = fingerprints_of(chunk, args.mode, args.width, args.threads)
        n = len(fps)
        positions = np.arange(position, position + n, dtype=np.uint64)
        is_new, matched = index.add_unique(fps, ids=positions)
        writer.write(chunk, is_new)
        if seen is not None and removed is not None:
            seen.add(chunk, fps)  # first: a record may match one kept earlier in its own chunk
            gone = np.flatnonzero(~is_new)
            at, others = positions[gone].astype(np.int64), np.asarray(matched[gone], dtype=np.int64)
            seen.write_removed(removed, at, others, shard_names(source, np.full(len(gone), chunk.shard), others))
        n_removed += n - int(np.count_nonzero(is_new))
        position += n
        progress.update(source.position(), source.records, shards_done(source))
    return n_removed
