"""``rsimhash cluster``: the clustering job of the original simhash command line.

Reads JSON lines (fingerprinted here, SPEC v1) or a hash TSV (``id<TAB>hash``),
clusters the fingerprints with the batch engine (``batch.clusters``, the
clusters ``Index(k=K, blocks=B).cluster`` gives) and writes them as a TSV
with the header ``id<TAB>hash<TAB>cluster``: ids as
written in the input, hashes in decimal, clusters numbered from 0 in the
order of their first record in the input, and within a cluster the records
in input order. By default only clusters of two or more records are written,
as the original does; ``--all`` writes every record, each singleton in a
cluster of its own. ``--sample N`` clusters the first N records of the input
only (the first N good records; reading stops there).

Several input shards (``--input`` repeated, a directory, a glob; see
``shards.py``) are clustered as one input, read in their order; ids that
are line numbers are written ``SHARD:LINE``.

``--method connected`` (default) gives connected components of the
within-K graph; ``leader`` gives, in input order, groups around the first
record of each that nothing before it matched.

Inputs whose fingerprints and ids would not fit ``--memory-limit`` are
spilled to ``--workdir`` as they are read, and the engine reads them from
there; the output is the same.

``--jaccard T`` links two records when their shingle sets are at least T
alike, checked exactly for each candidate pair of fingerprints
(``similar_pairs.py``), and writes the TSV ``id<TAB>cluster`` in the same order;
``leader`` is then the verified dedup's grouping (each removed record with
the earliest kept record it is alike).
"""

from __future__ import annotations

import argparse
from typing import Any, Tuple

import numpy as np

from . import similar_pairs
from .options import (
    add_distance,
    add_input,
    add_memory,
    add_run,
    add_text,
    bad_lines_part,
    make_index,
    memory_limit,
    open_source,
    positive_int,
)
from .outputs import Outputs
from .pipeline import blocks_of, expected_records
from .progress import Progress, count
from .shards import resolve_args
from .spill import Fingerprints, Ids, Workspace, engine_part

# Bytes a record costs on the in-memory path: its fingerprint, its id (an
# object in the worst case), its share of the engine's tables and answer.
IN_MEMORY_BYTES = 256

DESCRIPTION = """\
Cluster near-duplicate records: a record joins a cluster when it is within K
bits of at least one member (connected components). Writes a TSV with the
header 'id<TAB>hash<TAB>cluster'; clusters are numbered from 0 in the order of
their first record, members listed in input order.

examples:
  rsimhash cluster --input records.jsonl --format json --blocks 5 --distance 3 \\
      --text_column text --id_column id --window 5 --output clusters.tsv
  rsimhash cluster --input hashes.tsv --format hash --distance 3 --output clusters.tsv
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p, formats=("json", "hash", "parquet"), shards=True)
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default="-",
        help="the TSV 'id<TAB>hash<TAB>cluster'; - writes stdout. Default: %(default)s",
    )
    add_text(p)
    add_distance(p)
    p.add_argument(
        "--sample",
        type=positive_int,
        metavar="N",
        default=None,
        help="cluster only the first N records of the input. Default: all",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="write every record, each singleton in a cluster of its own (default: only clusters of two or more)",
    )
    p.add_argument(
        "--method",
        choices=("connected", "leader"),
        default="connected",
        help="connected: components of the within-K graph; leader: in input order each "
        "record joins the first leader within K or becomes one. Default: %(default)s",
    )
    similar_pairs.add_arguments(p, "link records")
    add_memory(p)
    add_run(p)


def run(args: argparse.Namespace) -> int:
    resolve_args(args)
    if args.jaccard is not None:
        return _run_verified(args)
    make_index(args.distance, args.blocks)  # checks --distance and --blocks before any file is touched
    limit = memory_limit(args)
    with (
        open_source(args, limit=args.sample, formats=("json", "hash", "parquet"), values_only=True) as source,
        Outputs() as outs,
        Workspace(args.workdir, args.output) as workspace,
    ):
        out = outs.open(args.output)
        progress = Progress("cluster", source.total, args.quiet)
        cap = limit // IN_MEMORY_BYTES
        store, ids = Fingerprints(cap, workspace), Ids(cap, workspace)
        try:
            for fps, held in blocks_of(source, args.mode, args.width, args.threads):
                store.add(fps, expect=expected_records(source))
                ids.extend_chunk(held)
                progress.update(source.position(), source.records)
            fps = store.finish()
            ids.finish()
            min_size = 1 if args.all else 2
            # The batch engine on the threads, in memory or from the spill:
            # one flat answer, no cluster a Python object (and none of its
            # work on this thread).
            spilled = isinstance(fps, str)
            if spilled:
                progress.close()
            values: Any = np.load(fps, mmap_mode="r") if spilled else fps
            positions, labels = _clusters_batch(fps, args, min_size, limit, workspace, progress=spilled)
            out.write(b"id\thash\tcluster\n")
            # Rows in blocks, not a cluster at a time: 10^5 clusters of two
            # are 10^5 small writes and id lookups otherwise.
            step = 1 << 16
            for lo in range(0, len(positions), step):
                block = np.asarray(positions[lo : lo + step])
                out.write(ids.rows([("id", block), ("number", values[block]), ("number", labels[lo : lo + step])]))
            members = len(positions)
            clusters = int(labels[-1]) + 1 if len(labels) else 0
        finally:
            store.close()
            ids.close()
        what = "clusters" if args.all else "clusters of two or more"
        progress.summary(
            "cluster",
            [
                count(source.records, "record") + " read",
                f"{clusters:,} {what} holding {count(members, 'record')}",
                bad_lines_part(source),
            ]
            + ([engine_part(workspace)] if store.spilled else []),
            source.nbytes,
        )
    return 0


def _clusters_batch(
    fps: Any, args: argparse.Namespace, min_size: int, limit: int, workspace: Workspace, *, progress: bool
) -> Tuple[np.ndarray, np.ndarray]:
    """``(member positions, cluster numbers)`` of the fingerprints (in
    memory, or spilled to the ``.npy`` at ``fps``), by the batch engine:
    the members of a cluster together, the clusters numbered 0, 1, ... in
    order. ``progress``: a bar of its own (for the spilled, long work)."""
    from .. import batch

    found: Any = batch.clusters(
        fps,
        args.distance,
        method=args.method,
        min_size=min_size,
        memory_limit=limit,
        workdir=workspace.path,
        threads=args.threads,
        blocks=args.blocks,
        progress=None if progress and not args.quiet else False,
    )
    positions, labels = found
    # The engine's labels, renumbered 0, 1, ... in the order they come.
    starts = np.zeros(len(labels), dtype=np.int64)
    if len(labels):
        starts[1:] = np.diff(labels) != 0
    return positions, np.cumsum(starts)


def _run_verified(args: argparse.Namespace) -> int:
    """``--jaccard``: clusters of records linked by verified pairs, as the TSV ``id<TAB>cluster``."""
    opts = similar_pairs.settings(args)
    limit = memory_limit(args)
    min_size = 1 if args.all else 2
    with Workspace(args.workdir, args.output) as workspace, Outputs() as outs:
        path = similar_pairs.input_path(args, workspace)
        with open_source(args, path=path, limit=args.sample, formats=("json", "hash", "parquet"), shingling=None) as source:
            similar_pairs.check_format(source)
            out = outs.open(args.output)
            clusters = members = 0
            with similar_pairs.gathered(args, opts, source, path, limit, workspace, "cluster", limit // IN_MEMORY_BYTES) as (
                records,
                ids,
                progress,
            ):
                positions, starts = _verified_clusters(records, args, min_size)
                out.write(b"id\tcluster\n")
                # Rows in blocks made in the core, not a write a cluster.
                sizes = np.diff(starts).astype(np.int64)
                labels = np.repeat(np.arange(len(sizes), dtype=np.uint64), sizes)
                step = 1 << 16
                for lo in range(0, len(labels), step):
                    block = np.asarray(positions[lo : lo + step], dtype=np.int64)
                    out.write(ids.rows([("id", block), ("number", labels[lo : lo + step])]))
                members, clusters = len(labels), len(sizes)
            what = "clusters" if args.all else "clusters of two or more"
            progress.summary(
                "cluster",
                [
                    count(source.records, "record") + " read",
                    f"{clusters:,} {what} holding {count(members, 'record')} ({args.measure} at least {args.jaccard:g})",
                    records.join_part(),
                    bad_lines_part(source),
                ]
                + ([engine_part(workspace)] if records.two is not None else []),
                source.nbytes,
            )
    return 0


def _verified_clusters(
    gathered: "similar_pairs.Gathered", args: argparse.Namespace, min_size: int
) -> Tuple[np.ndarray, np.ndarray]:
    """``(member positions, cluster starts)``: clusters in the order of their
    first record, members in input order."""
    if gathered.corpus is not None:
        corpus = gathered.corpus
        return similar_pairs.with_bars(
            args,
            "cluster",
            lambda bars: corpus.clusters(method=args.method, min_size=min_size, threads=args.threads, progress=bars),
        )
    assert gathered.two is not None
    for _ in gathered.two.again():
        pass
    return gathered.two.two.sweep.clusters(method=args.method, min_size=min_size)
