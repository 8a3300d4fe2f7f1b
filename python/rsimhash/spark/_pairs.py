"""Every pair within k across a DataFrame: the paper's batch mode (§3.3) as
Spark stages, with the Rust core inside each task, shuffling packed blocks.

1. A map task (``mapInArrow``) takes its partition's ``(fingerprint, id)``
   rows, up to ``CHUNK_ITEMS`` at a time, and hands them to
   ``ShuffleTables.pack``: for every table each item's permuted key is
   bucketed by its top bits (at most the table's prefix), and each
   ``(table, bucket)`` becomes one row, a binary block of its items.
2. Spark moves those few rows to the reduce task of their ``(table,
   bucket)``; a reduce task concatenates a bucket's blocks and runs
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


# Items a map task packs at once: a block (one table's bucket) is at most
# 2^22 items of 16 bytes, 64 MiB, however skewed the buckets.
CHUNK_ITEMS = 1 << 22
# Items of a (table, bucket) a reducer gets, about: sets the bucket bits.
BUCKET_ITEMS = 1 << 17
# Bytes of blocks a reduce partition gets at most, about (with evenly
# filled buckets): sets the partitions. A reduce task holds its partition's
# blocks (one Arrow batch of them: a binary column holds at most 2 GiB,
# eight times this).
PARTITION_BYTES = 256 << 20


def integral(data_type: Any) -> bool:
    """Whether ids of this Spark type travel in the packed blocks (as longs)."""
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    return isinstance(data_type, (LongType, IntegerType, ShortType, ByteType))


def layout(spark: Any, n: int, tables: int) -> Tuple[int, int]:
    """``(partitions, bits)`` of a packed shuffle of ``n`` items through
    ``tables`` tables: the session's shuffle partitions, more when the blocks
    would pass ``PARTITION_BYTES`` a partition; buckets of about
    ``BUCKET_ITEMS`` items, at least four (table, bucket) keys a partition."""
    try:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    except (TypeError, ValueError):  # "auto" on some platforms
        partitions = 200
    partitions = max(1, partitions, math.ceil(n * tables * 16 / PARTITION_BYTES))
    bits = max(0, math.ceil(math.log2(max(n, 1) / BUCKET_ITEMS)), math.ceil(math.log2(max(1.0, 4 * partitions / tables))))
    return partitions, min(bits, 16)


def packed_pairs(items: Any, k: int, blocks: int, n: int, output: str) -> Any:
    """``(a, b)`` long rows, ``a <= b``: the pairs of ``items`` (columns
    ``fp``, ``id``: signed longs, ``n`` rows) within ``k`` as ``output``
    asks (``ShuffleTables.reduce``). Each map task packs its items into
    one block a (table, bucket), each block one shuffled row; each reduce
    task gets whole buckets and runs the batch kernel's scan on them."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    tables = math.comb(blocks, k)
    partitions, bits = layout(items.sparkSession, n, tables)
    block_schema = StructType([StructField("key", IntegerType(), False), StructField("block", BinaryType(), False)])
    pair_schema = StructType([StructField("a", LongType(), False), StructField("b", LongType(), False)])
    blocks_df = items.select(F.col("fp"), F.col("id").cast("long")).mapInArrow(_pack(k, blocks, bits), block_schema)
    return blocks_df.repartition(partitions, "key").mapInArrow(_reduce(k, blocks, bits, output), pair_schema)


def _pack(k: int, blocks: int, bits: int) -> Any:
    def pack(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        from rsimhash._rsimhash import ShuffleTables

        shuffle = ShuffleTables(k, blocks)
        fps: List[np.ndarray] = []
        ids: List[np.ndarray] = []
        held = 0
        for batch in batches:
            if not batch.num_rows:
                continue
            fps.append(batch.column(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False))
            ids.append(batch.column(1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False))
            held += batch.num_rows
            if held >= CHUNK_ITEMS:
                yield from _blocks(shuffle, fps, ids, bits, pa)
                fps, ids, held = [], [], 0
        if held:
            yield from _blocks(shuffle, fps, ids, bits, pa)

    return pack


def _blocks(shuffle: Any, fps: List[np.ndarray], ids: List[np.ndarray], bits: int, pa: Any) -> Iterator[Any]:
    """One Arrow batch a table: a row for each of its non-empty buckets."""
    f = np.concatenate(fps).view(np.uint64)
    i = np.concatenate(ids).view(np.uint64)
    tables, buckets, starts, items = shuffle.pack(f, i, bits)
    data = items.reshape(-1).view(np.uint8)
    cuts = np.flatnonzero(np.diff(tables)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(tables)]])):
        first, last = int(starts[lo]), int(starts[hi])
        offsets = ((starts[lo : hi + 1] - first) * 16).astype(np.int32)
        block = pa.Array.from_buffers(
            pa.binary(), int(hi - lo), [None, pa.py_buffer(offsets), pa.py_buffer(data[first * 16 : last * 16])]
        )
        keys = (tables[lo:hi].astype(np.int64) << bits | buckets[lo:hi]).astype(np.int32)
        yield pa.RecordBatch.from_arrays([pa.array(keys), block], names=["key", "block"])


# Pairs in one Arrow batch of a reducer's output at most.
OUT_ROWS = 1 << 20


def _reduce(k: int, blocks: int, bits: int, output: str) -> Any:
    def reduce(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        from rsimhash._rsimhash import ShuffleTables

        shuffle = ShuffleTables(k, blocks)
        # The partition's blocks by bucket (no sort in Spark: it would copy
        # them all once more); the batches stay referenced until the end.
        parts: Dict[int, List[Any]] = {}
        for batch in batches:
            keys = batch.column(0).to_numpy(zero_copy_only=False)
            column = batch.column(1)
            for i in range(len(keys)):
                parts.setdefault(int(keys[i]), []).append(column[i].as_buffer())
        for key in sorted(parts):
            yield from _reduced(shuffle, key, bits, parts.pop(key), output, pa)

    return reduce


def _reduced(shuffle: Any, key: Any, bits: int, parts: List[Any], output: str, pa: Any) -> Iterator[Any]:
    items = np.concatenate([np.frombuffer(p, dtype=np.uint64) for p in parts])
    a, b = shuffle.reduce(int(key) >> bits, items, output)
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
