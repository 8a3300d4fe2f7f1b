"""Every pair within k across a DataFrame: the paper's batch mode (§3.3) as
Spark stages, with the Rust core inside each task.

1. Identical fingerprints collapse: only distinct values go through the
   shuffle (a page copied 100,000 times is one row), and their ids come
   back by joins at the end.
2. Each distinct value goes out once a table, keyed by ``(table, prefix)``
   (``ShuffleTables.keys``). A group larger than ``max_group`` values is cut
   into ``P`` parts by a hash of the value, and each value goes to the cell
   of its own part and to the ``P - 1`` cells pairing its part with another,
   so that no task compares more than about ``2 * max_group`` values and a
   skewed group spreads over ``P (P + 1) / 2`` tasks.
3. Rows are partitioned by ``(table, prefix, cell)`` and sorted; each task
   hands its rows to ``ShuffleTables.sorted_pairs`` a batch at a time. A
   pair is emitted only by the first table whose prefix it shares, the rule
   of ``rsimhash.batch.find_all``, so no pair comes twice and no global
   distinct is needed.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

# Values one task compares pair by pair at most (a part of a large group).
MAX_GROUP = 4096


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


def fingerprint_pairs(values: Any, k: int, blocks: int, max_group: int, *, forest: bool = False) -> Any:
    """``(fp_a, fp_b)`` rows: every pair of distinct values of the one-column
    DataFrame ``values`` (``fp``, signed longs) within ``k``, once. With
    ``forest``, only enough of them for the components: of each task's
    pairs, those that join two of its components (a dense group of values
    gives at most one pair a value, not nearly the square of them)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    keyed_schema = StructType(
        [StructField("t", IntegerType(), False), StructField("key", LongType(), False), StructField("fp", LongType(), False)]
    )
    keyed = values.mapInArrow(_keys_of(k, blocks), keyed_schema)
    big = (
        keyed.groupBy("t", "key")
        .count()
        .where(F.col("count") > max_group)
        .select("t", "key", F.ceil(F.col("count") / max_group).cast("int").alias("parts"))
    )
    cells = (
        keyed.join(F.broadcast(big), ["t", "key"], "left")
        .withColumn("parts", F.coalesce("parts", F.lit(1)))
        .withColumn("part", F.pmod(F.xxhash64("fp"), F.col("parts")).cast("int"))
        .withColumn("other", F.explode(F.sequence(F.lit(0), F.col("parts") - 1)))
        .select(
            "t",
            "key",
            "fp",
            (F.least("part", "other").cast("long") * F.col("parts") + F.greatest("part", "other")).alias("cell"),
            F.when(F.col("part") == F.col("other"), 0)
            .when(F.col("part") < F.col("other"), 1)
            .otherwise(2)
            .cast("byte")
            .alias("side"),
        )
    )
    pair_schema = StructType([StructField("fp_a", LongType(), False), StructField("fp_b", LongType(), False)])
    return (
        cells.repartition("t", "key", "cell")
        .sortWithinPartitions("t", "key", "cell", "side")
        .mapInArrow(_pairs_of(k, blocks, forest), pair_schema)
    )


def _keys_of(k: int, blocks: int) -> Any:
    def keys(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        from rsimhash._rsimhash import ShuffleTables

        shuffle = ShuffleTables(k, blocks)
        tables = shuffle.tables
        for batch in batches:
            fps = batch.column(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            if not len(fps):
                continue
            keys = shuffle.keys(fps.view(np.uint64))  # (N, tables)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(np.tile(np.arange(tables, dtype=np.int32), len(fps))),
                    pa.array(keys.reshape(-1).view(np.int64)),
                    pa.array(np.repeat(fps, tables)),
                ],
                names=["t", "key", "fp"],
            )

    return keys


def _pairs_of(k: int, blocks: int, forest: bool) -> Any:
    def pairs(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        from rsimhash._rsimhash import ShuffleTables

        shuffle = ShuffleTables(k, blocks)
        held: Optional[List[np.ndarray]] = None
        for batch in batches:
            cols = [batch.column(i).to_numpy(zero_copy_only=False) for i in range(5)]  # t key fp cell side
            if held is not None:
                cols = [np.concatenate([h, c]) for h, c in zip(held, cols)]
            if not len(cols[0]):
                continue
            # The last cell may go on in the next batch: keep it back.
            t, key, cell = cols[0], cols[1], cols[3]
            last = len(t) - 1
            same = (t == t[last]) & (key == key[last]) & (cell == cell[last])
            cut = int(np.flatnonzero(~same)[-1]) + 1 if not same.all() else 0
            held = [c[cut:] for c in cols]
            if cut:
                yield _found(shuffle, [c[:cut] for c in cols], pa, forest)
        if held is not None and len(held[0]):
            yield _found(shuffle, held, pa, forest)

    return pairs


def _found(shuffle: Any, cols: List[np.ndarray], pa: Any, forest: bool) -> Any:
    t, key, fp, cell, side = cols
    fp = fp.astype(np.int64, copy=False)
    ij = shuffle.sorted_pairs(
        t.astype(np.uint32),
        key.astype(np.int64, copy=False).view(np.uint64),
        cell.astype(np.int64, copy=False).view(np.uint64),
        side.astype(np.uint8),
        fp.view(np.uint64),
    )
    if forest and len(ij):
        ij = type(shuffle).spanning(ij, fp.view(np.uint64))
    return pa.RecordBatch.from_arrays([pa.array(fp[ij[:, 0]]), pa.array(fp[ij[:, 1]])], names=["fp_a", "fp_b"])


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
