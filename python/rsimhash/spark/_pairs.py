"""Every pair within k across a DataFrame: the paper's batch mode (§3.3) as
Spark stages, with the Rust core inside each task, shuffling packed blocks.

1. A count pass (``plan``): each map task counts its distinct values by
   the top bits of each table's permuted key (``ShuffleTables.histogram``;
   a sample past ``2 * SAMPLE_ROWS`` rows, none when the rows fit one
   task); the driver sums them and plans reduce tasks of at most
   ``TASK_ITEMS`` distinct values (``ShuffleTables.plan``): runs of fine
   buckets, a dense prefix group cut into cells whose pairs are tasks.
2. A map task (``mapInArrow``) takes its partition's ``(fingerprint, id)``
   rows, up to ``CHUNK_ITEMS`` at a time, and hands them to
   ``ShuffleTables.pack``: each item goes, for every table, to the task of
   its key (every task of its cell), and each task's items become rows of
   binary blocks.
3. Spark moves those few rows to the partition of their task's bin; a
   reduce task concatenates each task's blocks and runs
   ``ShuffleTables.reduce``: the batch kernel's group scan, copies of a
   fingerprint collapsed onto their smallest id, each pair emitted only by
   the first table whose prefix it shares (the rule of
   ``rsimhash.batch.find_all``), so no pair comes twice and no global
   distinct is needed. The ids travel in the blocks and the pairs come out
   as pairs of ids (other ids come back by a join, ``fingerprint_pairs``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np


def choose_blocks(n: int, k: int, tables: Optional[int] = None) -> int:
    """Blocks of the single-level design for ``n`` distinct values (``k``
    from 0 to 16), as the core chooses them (``distributed::shuffle_blocks``):
    with ``tables`` the design with that many tables, else the one with the
    least shuffled rows plus expected comparisons."""
    from .._rsimhash import ShuffleTables

    # A count no u64 holds is no design's (every design has at least one table).
    asked = None if tables is None else (tables if 0 <= tables < 1 << 64 else 0)
    blocks = ShuffleTables.choose_blocks(min(max(n, 0), (1 << 64) - 1), k, asked)
    if blocks is None:
        options = ", ".join(str(math.comb(b, k)) for b in range(k + 1, min(64, k + 7) + 1))
        raise ValueError(f"no design for k={k} has {tables} tables; choose one of {options}, ...")
    return int(blocks)


def fingerprint_pairs(values: Any, k: int, blocks: int, n: int, *, forest: bool = False) -> Any:
    """``(fp_a, fp_b)`` rows: every pair of distinct values of the one-column
    DataFrame ``values`` (``fp``, signed longs, ``n`` of them) within ``k``,
    once. With ``forest``, only enough of them for the components: of each
    bucket's pairs, those that join two of its components."""
    from pyspark.sql import functions as F

    items = values.select("fp", F.col("fp").alias("id"))
    pairs = packed_pairs(items, k, blocks, n, "forest" if forest else "first")
    return pairs.select(F.col("a").alias("fp_a"), F.col("b").alias("fp_b"))


# Items a map task packs at once: a block (one task's items of one map
# chunk) is at most 2^22 items of 16 bytes, 64 MiB.
CHUNK_ITEMS = 1 << 22
# Distinct values a reduce task holds at most, about (16 bytes each: 64
# MiB): a bucket with more is cut by further key bits inside the table's
# prefix, and a group sharing the whole prefix with more into cells whose
# pairs are tasks of two cells each. Read on the driver when a job is
# planned (tests set it tiny to force the cuts).
TASK_ITEMS = 1 << 22
# Fine buckets of the count pass for each task's worth of values, about:
# units of whole fine buckets fill their tasks to within a sixteenth.
FINE_SPLIT = 16
# Rows the count pass samples, about: sizes only steer the tasks' memory
# (any routes give the same pairs), and a sample of 2^20 rows sizes a task
# of 2^22 values out of 8 x 10^9 to within a few percent (about 500 of its
# values sampled), where counting every row took a quarter of the job at
# 10^7. Every row is counted below twice this.
SAMPLE_ROWS = 1 << 20
# Estimated sizes are raised by this before planning: the sample's error.
SAMPLE_MARGIN = 1.25
# The fewest values a reduce task is given when the input has more (up to
# the cap): a task costs its launch and a Python worker's hand-over (tens of
# ms on local[2]), so a small input split into the session's many
# partitions pays those more than its work (10^6 fingerprints in 8 tasks:
# 1.1 executor-seconds of reduce).
MIN_TASK_ITEMS = 1 << 21


def integral(data_type: Any) -> bool:
    """Whether ids of this Spark type travel in the packed blocks (as longs)."""
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    return isinstance(data_type, (LongType, IntegerType, ShortType, ByteType))


def shuffle_partitions(spark: Any) -> int:
    """The session's shuffle partitions (200 where it says "auto")."""
    try:
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    except (TypeError, ValueError):  # "auto" on some platforms
        return 200


def spark_partition(values: np.ndarray, partitions: int) -> np.ndarray:
    """The partition Spark's ``repartition(partitions, col)`` sends each int
    value of ``col`` to: ``pmod(murmur3_x86_32(value, seed 42), partitions)``,
    Spark's ``hash`` of an int column (``Murmur3_x86_32.hashInt``)."""
    with np.errstate(over="ignore"):
        m = np.uint32(0xFFFFFFFF)

        def rotl(x: np.ndarray, r: int) -> np.ndarray:
            return ((x << np.uint32(r)) | (x >> np.uint32(32 - r))) & m

        k1 = values.astype(np.int64).astype(np.uint32) * np.uint32(0xCC9E2D51)
        k1 = rotl(k1, 15) * np.uint32(0x1B873593)
        h1 = np.uint32(42) ^ k1
        h1 = rotl(h1, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h1 ^= np.uint32(4)
        h1 ^= h1 >> np.uint32(16)
        h1 *= np.uint32(0x85EBCA6B)
        h1 ^= h1 >> np.uint32(13)
        h1 *= np.uint32(0xC2B2AE35)
        h1 ^= h1 >> np.uint32(16)
    return np.mod(h1.view(np.int32).astype(np.int64), partitions)


def partition_keys(partitions: int) -> np.ndarray:
    """For each partition, an int that Spark's hash partitioning sends to
    it: the key a bin of tasks is shuffled by, so that each bin is a
    partition of its own (hashing the bins' numbers would put some two in
    one task and leave others empty)."""
    keys = np.full(partitions, -1, dtype=np.int64)
    start, step = 0, max(64, 4 * partitions)
    while (keys < 0).any():
        values = np.arange(start, start + step, dtype=np.int64)
        target = spark_partition(values, partitions)
        free = keys[target] < 0
        # The first value of each partition still without one.
        parts, first = np.unique(target[free], return_index=True)
        keys[parts] = values[free][first]
        start += step
    return keys


def plan(spark: Any, items: Any, shuffle: Any, n: int) -> Tuple[Dict[str, np.ndarray], np.ndarray, int]:
    """The routes of a packed shuffle of ``items`` (``fp`` column, ``n``
    rows) and each task's partition key: one Spark job counts the distinct
    values of each fine bucket of each table (``ShuffleTables.histogram``
    in each map task, summed; on a sample of about ``SAMPLE_ROWS`` rows
    past twice that, scaled up; none when ``n`` is at most the cap); units of fine buckets hold about
    ``n * tables / partitions`` values each and at most ``TASK_ITEMS``
    (``ShuffleTables.plan``); consecutive tasks are binned up to that size,
    a bin a partition. Returns the routes' parts, the partition key of each
    task, and the partitions."""
    tables = shuffle.tables
    cap = max(1, int(TASK_ITEMS))
    target = max(1, min(cap, max(MIN_TASK_ITEMS, math.ceil(max(n, 1) * tables / shuffle_partitions(spark)))))
    bits = max(0, math.ceil(math.log2(max(n, 1) * FINE_SPLIT / target)))
    fine = np.array([min(bits, shuffle.prefix(t), 16) for t in range(tables)], dtype=np.uint64)
    if n <= cap:
        # No task can pass the cap: no count pass (a Spark job), the fine
        # buckets taken as evenly filled.
        size = 1 << fine.astype(np.int64)
        hist = np.repeat(np.ceil(max(n, 1) / size).astype(np.uint64), size)
    elif n <= 2 * SAMPLE_ROWS:
        hist = _histogram(items, shuffle.k, shuffle, fine)
    else:
        fraction = SAMPLE_ROWS / n
        sampled = _histogram(items.sample(fraction=fraction, seed=n), shuffle.k, shuffle, fine)
        hist = np.ceil(sampled * (SAMPLE_MARGIN / fraction)).astype(np.uint64)
    unit_of, cells, sizes = shuffle.plan(fine, hist, target, cap)
    bins = np.zeros(len(sizes), dtype=np.int64)
    held, b = 0, 0
    for task, size in enumerate(sizes.tolist()):
        if held and held + size > target:
            b, held = b + 1, 0
        bins[task] = b
        held += size
    partitions = int(bins[-1]) + 1 if len(bins) else 1
    return {"fine": fine, "unit_of": unit_of, "cells": cells}, partition_keys(partitions)[bins], partitions


def _histogram(items: Any, k: int, shuffle: Any, fine: np.ndarray) -> np.ndarray:
    """The count pass: each map task's histogram of distinct values by fine
    bucket, summed (by a tree of sums: the driver gets a few, not one a
    map task)."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    blocks = _blocks_of(shuffle)

    def count(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        from rsimhash._rsimhash import ShuffleTables

        tables = ShuffleTables(k, blocks)
        hist: Optional[np.ndarray] = None
        for fps in _chunks(batches, 1):
            h = tables.histogram(fps[0], fine).astype(np.uint64)
            hist = h if hist is None else hist + h
        if hist is not None:
            yield pa.RecordBatch.from_arrays([pa.array([hist.view(np.uint8).tobytes()], pa.binary())], names=["hist"])

    schema = StructType([StructField("hist", BinaryType(), False)])
    size = int((1 << fine.astype(np.int64)).sum())
    zero = np.zeros(size, dtype=np.uint64)
    rows = items.select("fp").mapInArrow(count, schema).rdd.map(lambda r: np.frombuffer(r[0], dtype=np.uint64))
    return rows.treeAggregate(zero, np.add, np.add, depth=2)


def _blocks_of(shuffle: Any) -> int:
    """The blocks of a ``ShuffleTables`` (its tables are ``C(blocks, k)``)."""
    return next(b for b in range(shuffle.k + 1, 65) if math.comb(b, shuffle.k) == shuffle.tables)


def _chunks(batches: Iterator[Any], columns: int) -> Iterator[List[np.ndarray]]:
    """The first ``columns`` columns of Arrow batches as uint64 arrays, up
    to ``CHUNK_ITEMS`` rows at a time."""
    held: List[List[np.ndarray]] = [[] for _ in range(columns)]
    rows = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        for c in range(columns):
            held[c].append(batch.column(c).to_numpy(zero_copy_only=False).astype(np.int64, copy=False))
        rows += batch.num_rows
        if rows >= CHUNK_ITEMS:
            yield [np.concatenate(h).view(np.uint64) for h in held]
            held, rows = [[] for _ in range(columns)], 0
    if rows:
        yield [np.concatenate(h).view(np.uint64) for h in held]


def packed_pairs(items: Any, k: int, blocks: int, n: int, output: str) -> Any:
    """``(a, b)`` long rows, ``a <= b``: the pairs of ``items`` (columns
    ``fp``, ``id``: signed longs, ``n`` rows) within ``k`` as ``output``
    asks (``ShuffleTables.reduce``). A count pass plans the routes
    (``plan``); each map task packs its items into one block a reduce task,
    each block one shuffled row; each reduce task gets its unit (or its two
    cells) whole and runs the batch kernel's scan on it."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    from .._rsimhash import ShuffleTables

    items = items.select(F.col("fp"), F.col("id").cast("long"))
    routes, keys, partitions = plan(items.sparkSession, items, ShuffleTables(k, blocks), n)
    block_schema = StructType(
        [
            StructField("key", IntegerType(), False),
            StructField("task", IntegerType(), False),
            StructField("block", BinaryType(), False),
        ]
    )
    pair_schema = StructType([StructField("a", LongType(), False), StructField("b", LongType(), False)])
    blocks_df = items.mapInArrow(_pack(k, blocks, routes, keys), block_schema)
    return blocks_df.repartition(partitions, "key").mapInArrow(_reduce(k, blocks, routes, output), pair_schema)


def _pack(k: int, blocks: int, routes: Dict[str, np.ndarray], keys: np.ndarray) -> Any:
    def pack(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        from rsimhash._rsimhash import ShuffleTables

        shuffle = ShuffleTables(k, blocks)
        route = shuffle.routes(routes["fine"], routes["unit_of"], routes["cells"])
        for fps, ids in _chunks(batches, 2):
            yield from _blocks(shuffle, route, keys, fps, ids, pa)

    return pack


# Blocks in one Arrow batch of a map task's output at most.
BATCH_BLOCKS = 4096
# Items in one shuffled row at most (2 MiB): a task's items of a chunk go in
# rows of this size, which the JVM copies and compresses without the cost
# of huge arrays (rows of 16 MiB made the map stage slower).
ROW_ITEMS = 1 << 14


def _blocks(shuffle: Any, route: Any, keys: np.ndarray, fps: np.ndarray, ids: np.ndarray, pa: Any) -> Iterator[Any]:
    """The blocks of a chunk, a row each, in Arrow batches of at most
    ``BATCH_BLOCKS`` rows and 2 GiB (a binary column's offsets are 32-bit)."""
    tasks, starts, items = shuffle.pack(fps, ids, route)
    data = items.reshape(-1).view(np.uint8)
    # Each block cut into rows of at most ROW_ITEMS items.
    pieces = np.maximum(1, -(-np.diff(starts).astype(np.int64) // ROW_ITEMS))
    first = np.repeat(starts[:-1].astype(np.int64), pieces)
    nth = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    tasks = np.repeat(tasks, pieces)
    ends = np.repeat(starts[1:].astype(np.int64), pieces)
    starts = np.append(np.minimum(first + nth * ROW_ITEMS, ends), np.int64(starts[-1]))
    lo = 0
    while lo < len(tasks):
        hi = min(len(tasks), lo + BATCH_BLOCKS)
        # A block is at most CHUNK_ITEMS items times the cells' copies: cut at 1 GiB.
        hi = max(lo + 1, min(hi, int(np.searchsorted(starts, starts[lo] + (1 << 22), side="right")) - 1))
        start, last = int(starts[lo]), int(starts[hi])
        offsets = ((starts[lo : hi + 1] - start) * 16).astype(np.int32)
        block = pa.Array.from_buffers(
            pa.binary(), int(hi - lo), [None, pa.py_buffer(offsets), pa.py_buffer(data[start * 16 : last * 16])]
        )
        task = tasks[lo:hi].astype(np.int64)
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys[task].astype(np.int32)), pa.array(task.astype(np.int32)), block], names=["key", "task", "block"]
        )
        lo = hi


# Pairs in one Arrow batch of a reducer's output at most.
OUT_ROWS = 1 << 20


def _reduce(k: int, blocks: int, routes: Dict[str, np.ndarray], output: str) -> Any:
    def reduce(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        from rsimhash._rsimhash import ShuffleTables

        shuffle = ShuffleTables(k, blocks)
        route = shuffle.routes(routes["fine"], routes["unit_of"], routes["cells"])
        # The partition's blocks by task (no sort in Spark: it would copy
        # them all once more); a partition is one bin of tasks, about
        # TASK_ITEMS items at most, and its batches stay referenced until
        # the end.
        parts: Dict[int, List[Any]] = {}
        for batch in batches:
            tasks = batch.column(1).to_numpy(zero_copy_only=False)
            column = batch.column(2)
            for i in range(len(tasks)):
                parts.setdefault(int(tasks[i]), []).append(column[i].as_buffer())
        for task in sorted(parts):
            yield from _reduced(shuffle, route, task, parts.pop(task), output, pa)

    return reduce


def _reduced(shuffle: Any, route: Any, task: int, parts: List[Any], output: str, pa: Any) -> Iterator[Any]:
    items = np.concatenate([np.frombuffer(p, dtype=np.uint64) for p in parts])
    del parts[:]
    a, b = shuffle.reduce(route, task, items, output)
    del items
    for at in range(0, len(a), OUT_ROWS):
        yield pa.RecordBatch.from_arrays([pa.array(a[at : at + OUT_ROWS]), pa.array(b[at : at + OUT_ROWS])], names=["a", "b"])


def checked(df: Any, id_col: str, fp_col: str, nulls: str) -> Tuple[Any, int]:
    """``(id, fp)`` rows of ``df`` and how many there are, after the checks:
    the columns exist, the fingerprints are longs, and nulls are refused
    (``nulls="error"``) or dropped and counted (``"skip"``, with a warning)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    if nulls not in ("error", "skip"):
        raise ValueError(f'nulls must be "error" or "skip", got {nulls!r}')
    for name in (id_col, fp_col):
        if name not in df.columns:
            raise ValueError(f"no column {name!r} in the DataFrame (its columns: {', '.join(df.columns)})")
    if not isinstance(df.schema[fp_col].dataType, LongType):
        raise TypeError(
            f"column {fp_col!r} must hold fingerprints as longs (the same 64 bits, signed: "
            f"fingerprint_column makes them), got {df.schema[fp_col].dataType.simpleString()}"
        )
    base = df.select(F.col(id_col).alias("id"), F.col(fp_col).alias("fp"))
    fp_null, id_null = F.col("fp").isNull(), F.col("id").isNull()
    # One pass counts the rows and their nulls (a row null in both columns once).
    row = base.agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(fp_null.cast("long")).alias("fp_nulls"),
        F.sum(id_null.cast("long")).alias("id_nulls"),
        F.sum((fp_null | id_null).cast("long")).alias("null_rows"),
    ).collect()[0]
    n, fp_nulls, id_nulls = int(row["n"]), int(row["fp_nulls"] or 0), int(row["id_nulls"] or 0)
    if fp_nulls or id_nulls:
        what = " and ".join(f"{c} nulls in column {name!r}" for c, name in ((fp_nulls, fp_col), (id_nulls, id_col)) if c)
        if nulls == "error":
            raise ValueError(f'{what}: fill or drop them first, or pass nulls="skip" to leave those rows out')
        skipped = int(row["null_rows"])
        warnings.warn(f"rsimhash.spark: skipped {skipped} rows with {what}", stacklevel=3)
        base = base.dropna()
        n -= skipped
    return base, n
