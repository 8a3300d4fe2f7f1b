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

``--jaccard T`` removes instead each record whose shingle set is at least T
alike the set of a record kept before it, checked exactly for each
candidate pair of fingerprints (``dedup_verified.py``); ``--removed`` then
names the similarity, not the distance.
"""

from __future__ import annotations

import argparse
from array import array
from bisect import bisect_left
from itertools import chain
from typing import Any, Iterator, List, Optional

import numpy as np

from .._optional import module
from . import verified
from .inputs import Chunk, Source
from .pipeline import fingerprints_of, prefetch
from .options import (
    add_distance, add_input, add_memory, add_run, add_text, bad_lines_part, make_index, memory_limit, open_source,
)
from .outputs import Behind, Output, Outputs
from .progress import Progress, count
from .spill import Workspace, copy_stdin

# Bytes a record costs on the in-memory path when it is kept: its share of
# the Index, and with --removed its position, fingerprint and id.
IN_MEMORY_BYTES = 128
ID_BYTES = 96

HELP = "write the input minus its near-duplicates (the main job)"
DESCRIPTION = """\
Write the input records, unchanged and in input order, minus every record
that is within K bits of a record kept before it (the first of each group of
near-duplicates is kept).

example:
  rsimhash dedup --input corpus.jsonl --output kept.jsonl --removed removed.tsv
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p)
    p.add_argument("--output", "-o", metavar="FILE", required=True,
                   help="the kept records as read, in the input's format; - writes stdout; "
                        "a name ending in .gz or .zst is compressed")
    p.add_argument("--removed", metavar="FILE", default=None,
                   help="also write a TSV 'id<TAB>duplicate_of<TAB>distance' naming each removed "
                        "record and the kept record it is a near-duplicate of")
    add_text(p)
    add_distance(p)
    verified.add_arguments(p, "remove records alike an earlier kept one")
    add_memory(p)
    add_run(p)


class _Kept:
    """Position, fingerprint and id of every kept record, to name the one a
    removed record matched (``add_unique`` reports its position)."""

    def __init__(self) -> None:
        self.pos = array("Q")
        self.fps = array("Q")
        self.ids: List[Any] = []

    def add(self, positions: np.ndarray, fps: np.ndarray, ids: List[Any]) -> None:
        self.pos.extend(positions.tolist())
        self.fps.extend(fps.tolist())
        self.ids.extend(ids)

    def find(self, position: int) -> "tuple[Any, int]":
        i = bisect_left(self.pos, position)
        return self.ids[i], self.fps[i]


def run(args: argparse.Namespace) -> int:
    if args.jaccard is not None:
        verified.settings(args)  # a bad combination of flags fails before any file is touched
    index = make_index(args.distance, args.blocks)
    limit = memory_limit(args)
    explicit = args.memory_limit is not None or args.workdir is not None
    need_ids = args.removed is not None
    with Workspace(args.workdir, args.output) as workspace:
        path = args.input
        if args.input == "-" and explicit:
            # Read twice: stdin is copied first (its size is not known ahead).
            path = copy_stdin(workspace)
        with open_source(args, need_ids=need_ids, full_rows=True, path=path,
                         shingling=None if args.jaccard is not None else "args") as source, Outputs() as outs:
            out = outs.open(args.output)
            removed = outs.open(args.removed) if args.removed is not None else None
            chunks = prefetch(source.chunks())
            first = next(chunks, None)
            rest = chain([first], chunks) if first is not None else chunks
            if args.jaccard is not None:
                from . import dedup_verified

                return dedup_verified.run(args, source, rest, first, out, removed, limit, workspace, path)
            if removed is not None:
                removed.write(b"id\tduplicate_of\tdistance\n")
            per_record = IN_MEMORY_BYTES + (ID_BYTES if need_ids else 0)
            if path != "-" and (path != args.input or _estimated_records(source) * per_record > limit):
                from .dedup_batch import dedup_batch

                return dedup_batch(args, source, rest, out, removed, limit, workspace, path)
            return _in_memory(args, index, source, rest, out, removed)


def _estimated_records(source: Source) -> int:
    """Records of the whole input, from what its first chunk held."""
    if source.format == "parquet":
        return int(source.rows())
    read = source.position()
    if not source.total or not read:
        return source.records
    return int(source.total * source.records / read)


def _in_memory(args: argparse.Namespace, index: Any, source: Source, chunks: Iterator[Chunk], out: Output,
               removed: Optional[Output]) -> int:
    """The dedup through an ``Index`` of the kept records, in one pass."""
    writer = KeptWriter(out, source)
    kept = _Kept() if removed is not None else None
    progress = Progress("dedup", source.total, args.quiet)
    position = n_removed = 0
    for chunk in chunks:
        fps = fingerprints_of(chunk, args.mode, args.width, args.threads)
        n = len(fps)
        positions = np.arange(position, position + n, dtype=np.uint64)
        is_new, matched = index.add_unique(fps, ids=positions)
        writer.write(chunk, is_new)
        if kept is not None and removed is not None:
            new = np.flatnonzero(is_new)
            kept.add(positions[new], fps[new], [chunk.ids[j] for j in new.tolist()])
            _write_removed(removed, chunk, fps, np.flatnonzero(~is_new), matched, kept)
        n_removed += n - int(np.count_nonzero(is_new))
        position += n
        progress.update(source.position(), source.records)
    writer.close()
    summary(progress, args, source, n_removed, [])
    return 0


def summary(progress: Progress, args: argparse.Namespace, source: Source, n_removed: int, more: List[str]) -> None:
    """The run's summary line."""
    rule = f"within {args.distance} bits" if args.jaccard is None else f"{args.measure} at least {args.jaccard:g}"
    progress.summary("dedup", [
        count(source.records, "record") + " read",
        f"{n_removed:,} removed as near-duplicates ({rule})",
        f"{source.records - n_removed:,} kept",
        bad_lines_part(source),
    ] + more, source.nbytes)


class KeptWriter:
    """The kept records of the chunks given in order, as read: a hash TSV's
    header first (also when no record is kept), Parquet rows for a Parquet
    input, else each kept line byte for byte."""

    def __init__(self, out: Output, source: Source):
        self.out = out
        self.source = source
        self.parquet = _ParquetSink(out, source.schema()) if source.format == "parquet" else None
        self.header_written = False

    def _header(self) -> None:
        if self.source.header is not None and not self.header_written:
            self.out.write(self.source.header)
            self.header_written = True

    def write(self, chunk: Chunk, is_new: np.ndarray) -> None:
        self._header()
        if self.parquet is not None:
            self.parquet.write(chunk, is_new)
        else:
            self.out.write_records(chunk, is_new)

    def close(self) -> None:
        self._header()
        if self.parquet is not None:
            self.parquet.close()


def _write_removed(out: Output, chunk: Chunk, fps: np.ndarray, removed: np.ndarray,
                   matched: np.ndarray, kept: _Kept) -> None:
    rows = []
    for j in removed.tolist():
        other, other_fp = kept.find(int(matched[j]))
        bits = bin(int(fps[j]) ^ other_fp).count("1")
        rows.append(f"{chunk.ids[j]}\t{other}\t{bits}\n")
    if rows:
        out.write("".join(rows).encode("utf-8"))


class _ParquetSink:
    """Kept rows of a Parquet input, written as Parquet with the same schema,
    on a thread of their own (pyarrow encodes and compresses without the
    GIL), at most a few batches behind."""

    def __init__(self, out: Output, schema: Any):
        pa = module("pyarrow")
        pq = module("pyarrow.parquet")
        self.writer = pq.ParquetWriter(pa.PythonFile(_Sink(out), mode="w"), schema)
        self.behind = Behind("rsimhash-parquet", 2)

    def write(self, chunk: Chunk, is_new: np.ndarray) -> None:
        pa = module("pyarrow")
        assert chunk.rows is not None
        self.behind.submit(self.writer.write_batch, chunk.batch.take(pa.array(chunk.rows[is_new])))

    def close(self) -> None:
        self.behind.close()
        self.writer.close()


class _Sink:
    """The write side of an ``Output`` as a file object for pyarrow."""

    def __init__(self, out: Output):
        self.out = out
        self.pos = 0
        self.closed = False

    def write(self, data: Any) -> int:
        b = bytes(data)
        self.out.write(b)
        self.pos += len(b)
        return len(b)

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False
