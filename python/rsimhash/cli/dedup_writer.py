"""What every way of ``rsimhash dedup`` writes: the kept records as read,
the ``--removed`` rows, and the summary line. ``dedup.py`` (in memory),
``dedup_batch.py`` (two passes through the batch engine) and
``dedup_similar.py`` (``--jaccard``) all write through here.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from .. import _arrow
from .._optional import module
from .._records import Chunk, Source
from .errors import utf8
from .outputs import Behind, Output
from .progress import Progress, count
from .shard_out import ShardOutputs
from .spill import Ids


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

    def discard(self) -> None:
        """Nothing to do: the run's ``Outputs`` discards the output."""


class ShardedKeptWriter:
    """``KeptWriter`` of a sharded input read in order: each chunk's kept
    records go to its shard's output; a shard is finished (renamed into
    place) when the chunks move past it. Shards already finished by an
    earlier run of the same run are read past, not written."""

    def __init__(self, outputs: ShardOutputs, sources: Callable[[], Any]):
        self.outputs = outputs
        self.sources = sources  # the ShardedSource being read (its shards' Sources)
        self.at = -1
        self.out: Optional[Output] = None
        self.writer: Any = None

    def _advance(self, to: int) -> None:
        while self.at < to:
            self._finish()
            self.at += 1
            if not self.outputs.is_done(self.at):
                self.out = self.outputs.open(self.at)
                self.writer = KeptWriter(self.out, self.sources().sources[self.at])

    def _finish(self) -> None:
        if self.writer is not None and self.out is not None:
            self.writer.close()
            self.outputs.finish(self.at, self.out)
        self.writer = self.out = None

    def write(self, chunk: Chunk, is_new: np.ndarray) -> None:
        self._advance(chunk.shard)
        if self.writer is not None:
            self.writer.write(chunk, is_new)

    def close(self) -> None:
        self._advance(len(self.outputs.shards) - 1)
        self._finish()
        self.outputs.sync()

    def discard(self) -> None:
        if self.out is not None:
            self.out.discard()
        self.writer = self.out = None


def kept_writer(out: Any, sources: Any) -> Any:
    """The writer of the kept records: a ``KeptWriter`` of one output, or of
    each shard's own output when ``out`` is a ``ShardOutputs`` (see
    ``shard_out.py``); ``sources()`` is the source being read."""
    if isinstance(out, ShardOutputs):
        return ShardedKeptWriter(out, sources)
    return KeptWriter(out, sources())


def removed_header(column: str, sharded: bool) -> bytes:
    """The ``--removed`` TSV's header line; sharded inputs add the two records' shards."""
    extra = "\tshard\tduplicate_of_shard" if sharded else ""
    return f"id\tduplicate_of\t{column}{extra}\n".encode("ascii")


def shard_names(source: Any, shards: Any, matched: Any, matched_shards: Any = None) -> Any:
    """``(shards, shards of the records matched)`` as relative names, for
    ``write_removed``: None when the input is not sharded. ``matched`` are
    record positions; ``matched_shards`` names given for some of them
    (records of a store), None where the position is to be looked up."""
    from .shards import ShardedSource

    if not isinstance(source, ShardedSource):
        return None
    rels = [s.rel for s in source.shards]
    names = [rels[i] for i in np.asarray(shards, dtype=np.int64).tolist()]
    others = [rels[i] for i in source.shard_of(np.asarray(matched, dtype=np.int64)).tolist()] if len(matched) else []
    if matched_shards is not None:
        others = [o if m is None else m for o, m in zip(others, matched_shards)]
    return names, others


def shards_done(source: Any) -> Any:
    """``(done, total)`` shards of a sharded input, for the progress bar; else None."""
    done = getattr(source, "shards_done", None)
    return (done(), len(source.shards)) if done is not None else None


class Kept:
    """Position, id (and fingerprint, where kept) of every kept record, to
    name the one a removed record matched by its position. Grows by
    doubling: a lookup is a vectorised binary search, not a Python loop."""

    def __init__(self, fingerprints: bool) -> None:
        self.n = 0
        self.pos = np.empty(1024, np.uint64)
        self.fps: Optional[np.ndarray] = np.empty(1024, np.uint64) if fingerprints else None
        self.ids: List[Any] = []

    def add(self, positions: np.ndarray, ids: Sequence[Any], fps: Optional[np.ndarray] = None) -> None:
        m = len(positions)
        if self.n + m > len(self.pos):
            size = max(2 * len(self.pos), self.n + m)
            self.pos = np.resize(self.pos, size)
            if self.fps is not None:
                self.fps = np.resize(self.fps, size)
        self.pos[self.n : self.n + m] = positions
        if self.fps is not None and fps is not None:
            self.fps[self.n : self.n + m] = fps
        self.ids.extend(ids)
        self.n += m

    def find(self, positions: np.ndarray) -> np.ndarray:
        """The slot of each kept record at ``positions``."""
        return np.searchsorted(self.pos[: self.n], np.asarray(positions, dtype=np.uint64))

    def ids_at(self, slots: np.ndarray) -> List[Any]:
        return [self.ids[s] for s in slots.tolist()]

    def fps_at(self, slots: np.ndarray) -> np.ndarray:
        assert self.fps is not None
        return self.fps[slots]


class Seen:
    """Every record's id and fingerprint by position, for ``--removed``: a
    removed record names the kept one it matched by its position, and the
    rows are made in the core (``Ids.rows``) from the ids as the reader
    gave them (packed by the core, or line numbers: no object an id)."""

    def __init__(self) -> None:
        self.ids = Ids(sys.maxsize, None)  # the in-memory path: never spilled
        self.fps = np.empty(1024, np.uint64)
        self.n = 0

    def add(self, chunk: Chunk, fps: np.ndarray) -> None:
        """The records of ``chunk`` (whose fingerprints are ``fps``), next in order."""
        self.ids.extend_chunk(chunk)
        if self.n + len(fps) > len(self.fps):
            self.fps = np.resize(self.fps, max(2 * len(self.fps), self.n + len(fps)))
        self.fps[self.n : self.n + len(fps)] = fps
        self.n += len(fps)

    def write_removed(self, out: Output, at: np.ndarray, matched: np.ndarray, shards: Any = None) -> None:
        """The rows of the removed records at positions ``at``, each within K
        of the kept record at ``matched`` (``shards``: as ``write_removed``)."""
        if not len(at):
            return
        distance = bits(self.fps[at], self.fps[matched])
        if shards is None:
            out.write(self.ids.rows([("id", at), ("id", matched), ("number", distance)]))
        else:
            write_removed(out, self.ids.text(at), self.ids.text(matched), distance.tolist(), shards)


def bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distances of two uint64 arrays."""
    x = np.asarray(a, dtype=np.uint64) ^ np.asarray(b, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    return np.array([bin(int(v)).count("1") for v in x], dtype=np.uint8)  # numpy 1.x


def write_removed(out: Output, names: Sequence[Any], others: Sequence[Any], values: Sequence[Any], shards: Any = None) -> None:
    """``--removed`` rows ``id<TAB>duplicate_of<TAB>value`` (and, with
    ``shards``, ``<TAB>shard<TAB>duplicate_of_shard``)."""
    if not len(names):
        return
    if shards is None:
        out.write(utf8("".join(f"{a}\t{b}\t{v}\n" for a, b, v in zip(names, others, values))))
        return
    rows = zip(names, others, values, shards[0], shards[1])
    out.write(utf8("".join(f"{a}\t{b}\t{v}\t{s}\t{t}\n" for a, b, v, s, t in rows)))


def summary(progress: Progress, args: argparse.Namespace, source: Source, n_removed: int, more: List[str]) -> None:
    """The run's summary line."""
    from .options import bad_lines_part

    rule = f"within {args.distance} bits" if args.jaccard is None else f"{args.measure} at least {args.jaccard:g}"
    progress.summary(
        "dedup",
        [
            count(source.records, "record") + " read",
            f"{n_removed:,} removed as near-duplicates ({rule})",
            f"{source.records - n_removed:,} kept",
            bad_lines_part(source),
        ]
        + more
        + list(getattr(args, "notes", None) or []),  # resumed, already in the store
        source.nbytes,
    )


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
        assert chunk.rows is not None
        self.behind.submit(self.writer.write_table, _arrow.rows(chunk.batch, chunk.rows[is_new]))

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
